"""scikit-learn estimators gluing graphs, formulations, solvers and recovery together."""
