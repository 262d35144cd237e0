"""Renderers turn a Session into text, JSON or HTML; each declares the file extension it writes."""

from __future__ import annotations

import os
from typing import Protocol

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


class Renderer(Protocol):
    """Anything with a name, the file extension it writes, and ``render(session) -> str``."""

    name: str
    extension: str

    def render(self, session: Session) -> str:
        """The report as text."""
        ...


class UnknownFormatError(ValueError):
    """No renderer writes the requested extension or format name."""


_RENDERERS: tuple[type[TextRenderer] | type[JsonRenderer] | type[HtmlRenderer] | type[MarkdownRenderer], ...] = (
    TextRenderer,
    JsonRenderer,
    HtmlRenderer,
    MarkdownRenderer,
)
# Extra spellings people type; the canonical extension is the renderer's own.
_ALIASES = {".htm": ".html", ".text": ".txt", ".txt": ".txt", ".markdown": ".md"}
# The names --format accepts (``tfretrace run``/``report``): what a pipe or another tool reads.
FORMATS = ("text", "json", "markdown")


def extensions() -> list[str]:
    """The extensions ``-o`` accepts, e.g. ``['.txt', '.json', '.html', '.md']``."""
    return [cls.extension for cls in _RENDERERS]


def renderer_for(path_or_ext: str | os.PathLike[str]) -> Renderer:
    """The renderer for ``report.html``, ``.html``, ``html`` or a format name such as ``text``."""
    text = os.fspath(path_or_ext)
    key = text.lower()
    for cls in _RENDERERS:
        if key == cls.name:
            return cls()
    # A bare extension: splitext(".json") would see a hidden file with no extension.
    bare = key.startswith(".") and key.count(".") == 1
    ext = key if bare else os.path.splitext(key)[1]
    ext = _ALIASES.get(ext, ext)
    for cls in _RENDERERS:
        if ext == cls.extension:
            return cls()
    choices = ", ".join(extensions())
    raise UnknownFormatError(f"no report format for {text!r} (use one of {choices})")


def render(session: Session, fmt: str = "text") -> str:
    """Render ``session`` in the format named by ``fmt`` (a name, an extension or a file path)."""
    return renderer_for(fmt).render(session)
