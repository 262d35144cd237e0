"""Renderers turn a Session into text, JSON or HTML; each declares the file extension it writes."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tfretrace.records.session import Session
    from tfretrace.render.html import HtmlRenderer
    from tfretrace.render.json_report import JsonRenderer
    from tfretrace.render.markdown import MarkdownRenderer
    from tfretrace.render.text import TextRenderer

__all__ = [
    "HtmlRenderer",
    "JsonRenderer",
    "MarkdownRenderer",
    "Renderer",
    "TextRenderer",
    "UnknownFormatError",
    "extensions",
    "render",
    "renderer_for",
]

# (name, extension, module, class) of each renderer. A renderer's module loads when it is used:
# the HTML one pulls in jinja2 and the text one rich, which `tfretrace report --format json` and
# `tfretrace --help` never need.
_TABLE = (
    ("text", ".txt", "tfretrace.render.text", "TextRenderer"),
    ("json", ".json", "tfretrace.render.json_report", "JsonRenderer"),
    ("html", ".html", "tfretrace.render.html", "HtmlRenderer"),
    ("markdown", ".md", "tfretrace.render.markdown", "MarkdownRenderer"),
)
_CLASSES = {cls: module for _name, _ext, module, cls in _TABLE}


def __getattr__(name: str) -> Any:
    module = _CLASSES.get(name)
    if module is None:
        raise AttributeError(f"module 'tfretrace.render' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


class Renderer(Protocol):
    """Anything with a name, the file extension it writes, and ``render(session) -> str``."""

    name: str
    extension: str

    def render(self, session: Session) -> str:
        """The report as text."""
        ...


class UnknownFormatError(ValueError):
    """No renderer writes the requested extension or format name."""


# Extra spellings people type; the canonical extension is the renderer's own.
_ALIASES = {".htm": ".html", ".text": ".txt", ".txt": ".txt", ".markdown": ".md"}
# The names --format accepts (``tfretrace run``/``report``): what a pipe or another tool reads.
FORMATS = ("text", "json", "markdown")


def extensions() -> list[str]:
    """The extensions ``-o`` accepts, e.g. ``['.txt', '.json', '.html', '.md']``."""
    return [ext for _name, ext, _module, _cls in _TABLE]


def renderer_for(path_or_ext: str | os.PathLike[str]) -> Renderer:
    """The renderer for ``report.html``, ``.html``, ``html`` or a format name such as ``text``."""
    text = os.fspath(path_or_ext)
    key = text.lower()
    # A bare extension: splitext(".json") would see a hidden file with no extension.
    bare = key.startswith(".") and key.count(".") == 1
    ext = key if bare else os.path.splitext(key)[1]
    ext = _ALIASES.get(ext, ext)
    for name, extension, module, cls in _TABLE:
        if key == name or ext == extension:
            made: Renderer = getattr(importlib.import_module(module), cls)()
            return made
    choices = ", ".join(extensions())
    raise UnknownFormatError(f"no report format for {text!r} (use one of {choices})")


def render(session: Session, fmt: str = "text") -> str:
    """Render ``session`` in the format named by ``fmt`` (a name, an extension or a file path)."""
    return renderer_for(fmt).render(session)
