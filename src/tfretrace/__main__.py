"""``python -m tfretrace``: the same command line as the ``tfretrace`` script."""

from tfretrace.cli import main

raise SystemExit(main())
