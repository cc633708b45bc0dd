"""``python -m sdpembed``: the same command line as the ``sdpembed`` script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
