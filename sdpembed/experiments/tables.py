"""How a spec table is described and read: :class:`Field`, :func:`read_table`, frozen values.

The vocabulary of :mod:`sdpembed.experiments.schema` (which writes the spec's
tables with it) and of the modules that describe their own options with it
(:mod:`~sdpembed.experiments.metrics`, :mod:`~sdpembed.experiments.figures`):
a leaf, so that the schema can look up metric and figure kinds without a loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from .._checks import Check, NoneOr, did_you_mean
from ..exceptions import SpecError

__all__ = ["REQUIRED", "Field", "FrozenMap", "freeze", "thaw", "none_strings", "read_table",
           "fail", "check_known", "did_you_mean"]

REQUIRED = type("Required", (), {"__repr__": lambda self: "required"})()


def fail(where: str, problem: str) -> NoReturn:
    """Raise the :class:`SpecError` of field ``where``."""
    raise SpecError(f"{where}: {problem}" if where else problem)


@dataclass(frozen=True)
class Field:
    """One field of a spec table.

    Attributes
    ----------
    name : str
    check : Check
        Values accepted.
    default : object
        Value when the field is absent; :data:`REQUIRED` if it must be given.
    doc : str
        One line for the reference.
    none : bool
        The string ``"none"`` stands for ``None`` (TOML has no null).
    """

    name: str
    check: Check
    default: Any = REQUIRED
    doc: str = ""
    none: bool = False

    @property
    def accepts(self) -> Check:
        return NoneOr(self.check) if self.none else self.check


# --------------------------------------------------------------------------- frozen values


class FrozenMap(Mapping):
    """An immutable, hashable mapping (the spec's tables, method parameters, options)."""

    __slots__ = ("_data", "_hash")

    def __init__(self, items: Mapping | Iterable = ()):
        self._data = dict(items)
        self._hash = None

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self):
        return FrozenMap, (tuple(self._data.items()),)


def freeze(value: Any) -> Any:
    """Tables become :class:`FrozenMap`, arrays tuples, recursively."""
    if isinstance(value, Mapping):
        return FrozenMap((k, freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The inverse of :func:`freeze`: dicts and lists (for JSON and for estimators)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def none_strings(value: Any) -> Any:
    """TOML has no null: the string ``"none"`` stands for ``None`` (recursively in tables)."""
    if isinstance(value, str) and value == "none":
        return None
    if isinstance(value, Mapping):
        return {k: none_strings(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- reading tables


def check_known(table: Mapping, where: str, known: Iterable[str]) -> None:
    known = set(known)
    unknown = sorted(str(k) for k in set(table) - known)
    if unknown:
        fail(f"{where}.{unknown[0]}" if where else unknown[0],
             f"unknown field{did_you_mean(unknown[0], known)}; known fields of "
             f"{where or 'the spec'} are {sorted(known)}")


def read_table(table: Mapping, fields: Sequence[Field], where: str, *,
               extra: Iterable[str] = ()) -> dict:
    """Values of ``fields`` in ``table``, checked, with defaults; unknown fields refused.

    Parameters
    ----------
    table : mapping
    fields : sequence of Field
    where : str
        Dotted name of the table, prefixed to every error.
    extra : iterable of str
        Further keys allowed in ``table`` and left to the caller.
    """
    if not isinstance(table, Mapping):
        fail(where, f"expected a table; got {table!r}")
    check_known(table, where, {f.name for f in fields} | set(extra))
    out = {}
    for f in fields:
        name = f"{where}.{f.name}" if where else f.name
        if f.name not in table:
            if f.default is REQUIRED:
                fail(name, f"missing; expected {f.check.what}")
            out[f.name] = f.default
            continue
        value = table[f.name]
        if f.none and isinstance(value, str) and value == "none":
            value = None
        problem = f.accepts.problem(value)
        if problem is not None:
            fail(name, problem)
        out[f.name] = value
    return out
