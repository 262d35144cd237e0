"""The run's own tf.function objects, found once the program has finished: module-level defs and live methods."""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any

from tfretrace._tf.counters import counted_functions, kept_closures, kept_nested
from tfretrace._tf.programs import PROGRAMS

# Instances of one method probed at most: each instance's traces are compared with its own probe.
_MAX_INSTANCES = 8


def live_methods(path: str, qualname: str, root: str) -> list[Any]:
    """The run's tf.function objects for a method of a class in ``path``, one per live instance.

    ``@tf.function`` on a method gives each instance its own bound function (TensorFlow's
    descriptor), and ``self.step = tf.function(self._step)`` makes one per instance too; every
    such object the run called is kept by the call counters (``counted_functions``). Only those
    with traces are returned: their ``python_function`` already has the instance bound, so a new
    ``tf.function`` of it traces the method of that very object.
    """
    if "<locals>" in qualname or "." not in qualname:
        return []
    wanted = os.path.realpath(os.path.join(root, path))
    found = []
    for function in counted_functions():
        python = getattr(function, "python_function", None)
        if python is None or getattr(python, "__qualname__", None) != qualname:
            continue
        # A decorated method's bound function is TensorFlow's wrapper: its __wrapped__ chain ends
        # at the user's def; a bound method (tf.function(self._step)) has it as __func__.
        plain = getattr(python, "__func__", None) or inspect.unwrap(python)
        code = getattr(plain, "__code__", None)
        if code is None or os.path.realpath(code.co_filename) != wanted:
            continue
        if hasattr(function, "_list_all_concrete_functions") and function._list_all_concrete_functions():
            found.append(function)
        if len(found) >= _MAX_INSTANCES:
            break
    return found


def live_function(path: str, qualname: str, root: str) -> Any | None:
    """The run's tf.function object for a module-level def (or ``name = tf.function(def)``) in ``path``."""
    if "<locals>" in qualname or "." in qualname:
        return None  # nested defs and methods: no module attribute holds the one object (live_methods)
    return _module_bound(path, qualname, root)


def factory_made(path: str, qualname: str, root: str) -> Any | None:
    """The tf.function a factory made from a nested def, where a module-level name of the program holds it.

    ``step = make_step(2.0)`` at module level (as hoist-factory-call writes it) keeps the object the
    factory returned, with its closure: traced afresh, it is the very function the program calls.
    The caller asks only where the run made that one object, so it holds every trace of the def.
    """
    if "<locals>" not in qualname:
        return None
    return _module_bound(path, qualname, root)


def _module_bound(path: str, qualname: str, root: str) -> Any | None:
    wanted = os.path.realpath(os.path.join(root, path))
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or os.path.realpath(file) != wanted:
            continue
        for value in list(vars(module).values()):
            python = getattr(value, "python_function", None)
            if python is not None and getattr(python, "__qualname__", None) == qualname and hasattr(
                value, "_list_all_concrete_functions"
            ):
                return value
    # The program run as __main__ (tfretrace run script.py): its globals, kept by the runner.
    for namespace in (*PROGRAMS, vars(sys.modules["__main__"]) if "__main__" in sys.modules else {}):
        found = _in_namespace(namespace, wanted, qualname)
        if found is not None:
            return found
    return None


def _in_namespace(namespace: dict[str, Any], wanted: str, qualname: str) -> Any | None:
    for value in list(namespace.values()):
        python = getattr(value, "python_function", None)
        code = getattr(python, "__code__", None)
        if python is None or code is None or os.path.realpath(code.co_filename) != wanted:
            continue
        if getattr(python, "__qualname__", None) == qualname and hasattr(value, "_list_all_concrete_functions"):
            return value
    return None


def nested_functions(path: str, qualname: str, root: str) -> list[Any]:
    """The run's tf.function objects for a nested def that closes over nothing, each with its traces.

    Each call of the outer def made one; the call counters keep a few alive (counters.kept_nested),
    matched here by the def's file, as ``live_methods`` matches a method's.
    """
    if "<locals>" not in qualname:
        return []
    wanted = os.path.realpath(os.path.join(root, path))
    found: dict[int, Any] = {}
    for function in [*counted_functions(), *kept_nested(qualname)]:
        python = getattr(function, "python_function", None)
        code = getattr(python, "__code__", None)
        if code is None or getattr(python, "__qualname__", None) != qualname:
            continue
        if os.path.realpath(code.co_filename) != wanted or code.co_freevars:
            continue
        if hasattr(function, "_list_all_concrete_functions") and function._list_all_concrete_functions():
            found.setdefault(id(function), function)
    return list(found.values())



def closures(path: str, qualname: str, root: str) -> list[Any]:
    """The tf.function objects of a nested def with a closure that the run kept (counters.keep_retraced), first first.

    Each outer call made one, with the values it closes over: traced afresh, one is the very function
    the program called, and its cache holds every trace the run made of that object.
    """
    if "<locals>" not in qualname:
        return []
    wanted = os.path.realpath(os.path.join(root, path))
    found = []
    for function in kept_closures(qualname):
        code = getattr(getattr(function, "python_function", None), "__code__", None)
        if code is not None and os.path.realpath(code.co_filename) == wanted:
            found.append(function)
    return found


def share_cells(functions: list[Any]) -> bool:
    """True where every object's Python function closes over the very same cells (one call of the enclosing def).

    A def moved into the function around its outer one binds the cells of that function's call: the
    objects the run made then had them all, or the outer-outer def ran again and each call made its own.
    """
    cells = [getattr(getattr(f, "python_function", None), "__closure__", None) for f in functions]
    if not cells or any(c is None for c in cells):
        return False
    first = cells[0]
    assert first is not None
    return all(c is not None and len(c) == len(first) and all(a is b for a, b in zip(c, first, strict=True))
               for c in cells[1:])
