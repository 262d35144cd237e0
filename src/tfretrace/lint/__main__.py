"""``python -m tfretrace.lint``: the same as ``tfretrace lint``."""

from __future__ import annotations

import sys

from tfretrace.lint.cli import main

if __name__ == "__main__":
    sys.exit(main())
