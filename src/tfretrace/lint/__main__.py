"""``python -m tfretrace.lint``: the same as ``tfretrace lint``."""

from __future__ import annotations

import sys

from tfretrace.cli.lint_command import main

if __name__ == "__main__":
    sys.exit(main())
