"""A nested def asked as hoisted whose tf.function objects, and so their traces, are gone: not asked, and it says so."""

from __future__ import annotations

from pathlib import Path

from sessions import storm
from tfretrace.runtime import probe


def test_a_hoisted_def_with_no_trace_kept_is_not_asked(tmp_path: Path) -> None:
    report = storm(name="evaluate.<locals>.batch_error")
    asked = probe.probe_live(str(tmp_path))
    hoisted = ("@tf.function\ndef batch_error(x):\n    return x\n", 2)
    # No tf.function object of that def was called in this process: nothing to run the def beside.
    assert asked(report, "[tf.TensorSpec(shape=[None], dtype=tf.float32)]", "tf", hoisted) == probe._NO_NESTED_TRACE
    assert asked.argument(report, "x", ("float32",), hoisted) == (None, None, None, 0)
    # Not as hoisted (no ``edited``): a nested def has no live function, as before.
    assert asked(report, "[tf.TensorSpec(shape=[None], dtype=tf.float32)]", "tf") == probe._NOT_FOUND
