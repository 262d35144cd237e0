"""The one-retrace explanation text shared by warnings, logs, budgets and the Keras callback."""

from __future__ import annotations

from tfretrace._util.text import printable
from tfretrace.records.events import TraceEvent


def format_event(name: str, location: str, event: TraceEvent) -> str:
    """The text of the warning and log record for one retrace."""
    if event.keras is not None:
        name = f"{event.keras.describe()} [{name}]"
    head = (
        f"{name} ({location}) traced again: trace #{event.index}, {event.cause}, "
        f"{event.seconds * 1000:.1f} ms, called at {event.call_site or '?'}"
    )
    lines = [head]
    if event.closest:
        ties = "" if len(event.closest) == 1 else f" (tied with #{', #'.join(map(str, event.closest[1:]))})"
        lines.append(f"  compared with trace #{event.closest[0]}{ties}:")
        if not event.changes and event.cause == "new-function-object":
            lines.append("    identical signature: only the tf.function object is new")
    lines.extend(f"    {change.line()}" for change in event.changes)
    if event.note:
        lines.append(f"  note: {event.note}")
    if event.raw_key:
        lines.append(f"    raw cache key: {event.raw_key}")
    if event.fix:
        lines.append("  fix:")
        lines.extend(f"    {line}" for line in event.fix.splitlines())
    # Warnings and logs reach a terminal: names and paths must not carry escape sequences.
    return printable("\n".join(lines))

