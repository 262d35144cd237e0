"""The rich Console of an output stream: colour and width as rich detects them (one place)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console


def is_tty(stream: TextIO) -> bool:
    """Whether the stream is a terminal; False for a stream that is closed or replaced by a stand-in."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def console_for(stream: TextIO, environ: Mapping[str, str] | None = None) -> Console:
    """The one rich Console of an output stream, made at the CLI edge and passed down.

    rich decides colour and width from the stream and the environment (NO_COLOR, FORCE_COLOR,
    TERM=dumb, COLUMNS, the terminal's size); tfretrace only keeps its 100 columns where rich
    would guess 80: a stream that is no terminal, or a terminal whose size cannot be read.
    """
    from rich.console import Console  # rich loads when something is drawn, not with the CLI

    env = dict(os.environ if environ is None else environ)
    columns = env.get("COLUMNS", "")
    valid = columns.isascii() and columns.isdigit()
    if not valid:  # rich would int() a '²' (str.isdigit accepts it) and fail
        env.pop("COLUMNS", None)
    console = Console(file=stream, highlight=False, markup=False, emoji=False, _environ=env)
    if not valid and not _terminal_size_known(stream):
        console.width = 100
    return console


def _terminal_size_known(stream: TextIO) -> bool:
    if not is_tty(stream):
        return False
    try:
        os.get_terminal_size(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return True


def colored(console: Console) -> bool:
    """Whether text for this console gets colour (rich's answer: a terminal, not NO_COLOR, not dumb)."""
    return console.is_terminal and console.color_system is not None and not console.no_color
