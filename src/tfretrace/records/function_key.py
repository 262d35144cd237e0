"""Stable identity of a traced function across runs and commits (FunctionKey) and pairing by it."""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any

from tfretrace._util import checked as C

__all__ = [
    "EDITED",
    "EXACT",
    "HOISTED",
    "MOVED",
    "FunctionKey",
    "code_key",
    "function_key",
    "keras_key",
    "module_of_path",
    "source_hash",
]

# How a pair was matched, strongest first: the same key; the same code under the same name in
# another module (the file moved or was renamed); the same name in the same module with other
# code (the function was edited).
EXACT = "exact"
MOVED = "moved"
EDITED = "edited"
# A nested def that a fix moved to module level: the same module, the name it was given there
# (the fix plan's inserted def says which), or its own code under its own last name.
HOISTED = "hoisted"

# Hex digits of sha256 kept: 64 bits tell apart every function of any real project.
_HASH_DIGITS = 16
# Keras numbers auto-named layers with process-wide counters (dense, dense_1, ...): the same
# model is dense_3 in one run and dense in another, so the number is not part of its identity.
_AUTO_NUMBER = re.compile(r"_\d+$")
_KERAS_PREFIX = "keras:"


@dataclass(frozen=True, order=True)
class FunctionKey:
    """What makes a traced function the same one in two runs: where it lives, its name, its code.

    ``module`` is the dotted path of its file under the project root (``src.app.train``);
    ``qualname`` its ``__qualname__`` (``Trainer.step``, ``keras:Sequential.train`` for a Keras
    model's train/test/predict functions); ``code_hash`` a hash of its own source text, dedented
    and without blank lines, so that neither edits elsewhere in the file nor a move change it;
    None where the source could not be read.
    """

    module: str
    qualname: str
    code_hash: str | None = None

    def describe(self) -> str:
        """``src.app.train:Trainer.step``."""
        return f"{self.module}:{self.qualname}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the ``key`` object of a session's function record)."""
        return {"module": self.module, "qualname": self.qualname, "code_hash": self.code_hash}

    @classmethod
    def from_dict(cls, data: Any, where: str = "key") -> FunctionKey:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        data = C.mapping(data, where)
        return cls(
            C.text(data.get("module"), f"{where}.module"),
            C.text(data.get("qualname"), f"{where}.qualname"),
            C.optional_text(data.get("code_hash"), f"{where}.code_hash"),
        )


def module_of_path(path: str, root: str | None = None) -> str:
    """The dotted module of a source file: from ``root`` down, from site-packages down, else its name.

    A file outside the project keeps only its own name: an absolute path would differ between
    two checkouts of the same program.
    """
    if path.startswith("<"):
        return path  # <stdin>, <string>: no file
    text = path.replace("\\", "/")
    if "site-packages/" in text:
        text = text.split("site-packages/", 1)[1]
    elif os.path.isabs(path):
        relative = None
        if root:
            try:
                relative = os.path.relpath(path, root).replace("\\", "/")
            except ValueError:  # another drive on Windows
                relative = None
        text = relative if relative is not None and not relative.startswith("..") else os.path.basename(path)
    text = text.removeprefix("./")
    for suffix in (".py", ".pyw", ".ipynb"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
            break
    module = ".".join(part for part in text.split("/") if part and part != ".")
    return module.removesuffix(".__init__") or "<unknown>"


def source_hash(source: str) -> str:
    """The sha256 prefix of a function's source, dedented, trailing spaces and blank lines dropped."""
    lines = textwrap.dedent(source.replace("\r\n", "\n").replace("\r", "\n")).split("\n")
    normal = "\n".join(line.rstrip() for line in lines if line.strip())
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_DIGITS]


def _code_source_hash(code: CodeType) -> str | None:
    try:
        lines, _ = inspect.getsourcelines(code)
    except (OSError, TypeError, SyntaxError, IndexError, UnicodeDecodeError):
        return None  # no file (exec, a deleted file), or a file that no longer parses
    return source_hash("".join(lines))


def code_key(code: CodeType, qualname: str, root: str | None = None) -> FunctionKey:
    """The key of the function whose code object is ``code``."""
    return FunctionKey(module_of_path(code.co_filename, root), qualname, _code_source_hash(code))


def _unwrap(function: Any) -> Any:
    # Decorators (functools.wraps), bound methods, partials and tf.function objects
    # (python_function) all lead to the Python function whose code is traced.
    for _ in range(20):
        if isinstance(function, functools.partial):
            function = function.func
        elif hasattr(function, "__wrapped__"):
            function = function.__wrapped__
        elif hasattr(function, "__func__"):
            function = function.__func__
        elif getattr(function, "__code__", None) is None and hasattr(function, "python_function"):
            function = function.python_function
        else:
            return function
    return function


def function_key(function: Callable[..., Any], root: str | os.PathLike[str] | None = None) -> FunctionKey:
    """The key of a live Python function (or a wrapper of one), its module taken from ``root``.

    ``root`` defaults to the current directory, the folder a session's relative paths start from.
    """
    inner = _unwrap(function)
    code = getattr(inner, "__code__", None)
    qualname = str(getattr(inner, "__qualname__", getattr(inner, "__name__", "<unknown>")))
    if not isinstance(code, CodeType):
        module = str(getattr(inner, "__module__", None) or "<unknown>")
        return FunctionKey(module, qualname, None)
    return code_key(code, qualname, os.getcwd() if root is None else os.fspath(root))


def keras_key(
    built_at: str | None, model_class: str, role: str, layer_names: Sequence[str] | None = None,
    root: str | None = None,
) -> FunctionKey:
    """The key of a Keras model's train/test/predict function: where the model is built, its class and role.

    The build site's line is left out (a line shift keeps the key); the layers' names, without
    Keras' automatic numbering, make the code hash, so two models of one class built in one
    module stay apart. Without layer names (an older session) there is no code hash.
    """
    module = module_of_path(path_of_site(built_at), root) if built_at else "<unknown>"
    code_hash = None
    if layer_names is not None:
        names = "\n".join([model_class, *(_AUTO_NUMBER.sub("", name) for name in layer_names)])
        code_hash = source_hash(names)
    return FunctionKey(module, f"{_KERAS_PREFIX}{model_class}.{role}", code_hash)


def path_of_site(site: str) -> str:
    """The file of a ``path:line`` site (the site itself when it has no line)."""
    path, sep, line = site.rpartition(":")
    return path if sep and line.isdigit() else site
