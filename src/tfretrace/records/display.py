"""The records' notebook display, bound late: the package's top plugs the renderers in, records never import them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Show = Callable[[Any], str]

# Filled by tfretrace/__init__.py (the top of the package, which may import every layer) with
# functions that load the renderers only when a notebook shows a record.
_HOOKS: dict[str, Show] = {}


def use(**hooks: Show) -> None:
    """Plug in the functions that draw a record: ``session_html``, ``function_html``, ``session_summary``."""
    _HOOKS.update(hooks)


def show(name: str, record: Any) -> str | None:
    """What the plugged-in renderer draws for ``record``; None when none is plugged in (IPython then falls back)."""
    hook = _HOOKS.get(name)
    return None if hook is None else hook(record)
