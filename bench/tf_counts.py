"""Run a Python program and count its traces with TensorFlow's own counter, without tfretrace.

Usage: python bench/tf_counts.py OUT.json SCRIPT [ARG ...]

Every tf.function object the program creates is kept (so a short-lived one still answers at the
end), and OUT.json gets, per function qualname, the sum of ``experimental_get_tracing_count()``
over its objects: the "measured" count of bench/fix_effect.py and the real-TensorFlow fix tests.
The program runs as ``__main__`` from its own folder; its exit status is this script's. With
TF_COUNTS_REDUCE_RETRACING=1 every tf.function the program makes gets TensorFlow's own
``reduce_retracing=True`` (bench/prevent_effect.py's "reduce_retracing" column).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from typing import Any


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    out, script, *args = argv
    out = os.path.abspath(out)
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    created: list[Any] = []
    init = pf.Function.__init__
    force = os.environ.pop("TF_COUNTS_REDUCE_RETRACING", "") == "1"

    def keep(self: Any, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        if force:
            # Read when the function first traces (its tracing options), so setting it here counts.
            self._reduce_retracing = True
        created.append(self)

    pf.Function.__init__ = keep  # type: ignore[method-assign]
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    status = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        counts: dict[str, int] = {}
        for function in created:
            python = getattr(function, "_python_function", None)
            name = getattr(python, "__qualname__", None) or getattr(function, "_name", "?")
            counts[name] = counts.get(name, 0) + function.experimental_get_tracing_count()
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(counts, fh, indent=1, sort_keys=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
