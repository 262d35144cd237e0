"""The function as a fix would write it, made in memory: its edited def compiled against the live module's globals.

A fix step that edits a ``tf.function``'s body (``tf.constant(n)`` -> ``tf.convert_to_tensor(n)``,
``tf.add_n(xs)`` -> ``tf.reduce_sum(xs, axis=0)``) changes the code TensorFlow would trace, so the
live function is not the one to ask. Here the edited file's text is parsed, the one def taken out
of it (its decorators dropped: the probe wraps it as the fix decorates it) and compiled on its own
into a new function object whose globals are the live function's module globals. Nothing is
executed in, or written to, the user's module or files: the compiled module's code is never run,
only the def's code object is taken from it. Autograph reads a function's source to convert it;
the edited text is registered under a name of its own in ``linecache``, so it reads the edited
body rather than the file on disk.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import types
from typing import Any

from tfretrace._tf.run_compare import compare_converted

# One pseudo-file per edited def: autograph (and a traceback) reads the source from linecache.
_NAMES = itertools.count(1)


def rebuilt(python: Any, text: str, line: int) -> Any | None:
    """A new function from the def at ``line`` of the edited file ``text``, bound as ``python`` is; None where not.

    ``python``: the live ``tf.function``'s ``python_function`` (a module-level def, or a bound
    method). None where the def cannot be rebuilt faithfully: a closure (its cells belong to
    another scope), a wrapper TensorFlow made around a method, or no def of that name at ``line``.
    """
    bound = getattr(python, "__self__", None) if inspect.ismethod(python) else None
    plain = python.__func__ if bound is not None else python
    code = getattr(plain, "__code__", None)
    if not inspect.isfunction(plain) or code is None or code.co_freevars:
        return None  # a closure's free variables live in a scope this cannot rebuild
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    node = next((
        n for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno == line and n.name == plain.__name__
    ), None)
    if node is None:
        return None
    node.decorator_list = []
    name = f"<tfretrace edited {next(_NAMES)}: {code.co_filename}>"
    linecache.cache[name] = (len(text), None, text.splitlines(keepends=True), name)
    module = compile(ast.Module(body=[node], type_ignores=[]), name, "exec")
    made = next((c for c in module.co_consts if isinstance(c, types.CodeType) and c.co_name == plain.__name__), None)
    if made is None or made.co_freevars:
        return None
    function = types.FunctionType(made, plain.__globals__, plain.__name__, plain.__defaults__)
    function.__kwdefaults__ = plain.__kwdefaults__
    function.__qualname__ = plain.__qualname__
    function.__module__ = plain.__module__
    return types.MethodType(function, bound) if bound is not None else function


def converter(tf: Any, general: Any, names: list[str]) -> Any:
    """Maps a recorded trace's made arguments to those ``general`` (a concrete function) takes.

    Where the general function takes a tensor and the recorded call passed a Python value, the
    value becomes ``tf.constant(value, dtype)`` (what the fix writes at the call site); a list of
    tensors becomes ``tf.stack`` of them. Keyword arguments go to their positions where the general
    function binds everything by position (an ``input_signature``). ``names``: the parameters.
    """
    specs, spec_kwargs = general.structured_input_signature

    def convert(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        args, kwargs = tuple(args), dict(kwargs)
        if kwargs and not spec_kwargs:
            ordered = list(args)
            for name in names[len(args):]:
                if name not in kwargs:
                    break
                ordered.append(kwargs.pop(name))
            args = tuple(ordered)
        new_args = tuple(_one(tf, a, s) for a, s in zip(args, (*specs, *([None] * len(args)))))
        new_kwargs = {k: _one(tf, v, spec_kwargs.get(k)) for k, v in kwargs.items()}
        return new_args, new_kwargs

    return convert


def _one(tf: Any, value: Any, spec: Any) -> Any:
    # A number inside a literal tuple, list or dict argument: the call site converts that element alone.
    if type(spec) is dict and type(value) is dict and spec.keys() == value.keys():
        return {k: _one(tf, v, spec[k]) for k, v in value.items()}
    if type(spec) in (tuple, list) and type(value) in (tuple, list) and len(spec) == len(value):
        return type(value)(_one(tf, v, s) for v, s in zip(value, spec, strict=True))
    if not isinstance(spec, tf.TensorSpec) or isinstance(value, tf.Tensor):
        return value
    if isinstance(value, tf.Variable):
        return tf.convert_to_tensor(value)  # a variable the body only reads, passed as a tensor
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, tf.Tensor) for v in value):
        return tf.stack(value)
    return tf.constant(value, dtype=spec.dtype)


def runs_alike(tf: Any, traces: list[Any], general: Any, names: list[str]) -> tuple[int, str | None]:
    """On how many inputs every recorded trace and ``general`` computed the same, and the first trace where not.

    TensorFlow runs both versions (run_compare): each recorded trace's concrete function and the
    edited function's, on inputs made from the recorded signature, the recorded Python values
    passed as the edited call sites pass them (``converter``).
    """
    compared = 0
    convert = converter(tf, general, names)
    for number, trace in enumerate(traces, 1):
        ran, differ = compare_converted(trace, general, convert)
        compared += ran
        if differ is not None:
            return compared, f"trace #{number}: {differ}"
    return compared, None
