"""Finding a live tf.function's entry in a profile by its FunctionKey (exact, then the reported fallbacks)."""

from __future__ import annotations

from dataclasses import dataclass

from tfretrace.records.function_key import EXACT, MOVED, FunctionKey
from tfretrace.records.matching import match, record_key
from tfretrace.runtime.prevent.profile import Entry, Profile


@dataclass(frozen=True)
class Found:
    """The matching entry, and how it was matched when not exactly (said in the report)."""

    entry: Entry
    fallback: str | None = None


def find(profile: Profile, key: FunctionKey) -> Found | None:
    """The profile entry for a function met in this run, or None.

    Exact key first; then the same code under the same name elsewhere (the file moved); then the
    same module and name (the code was edited, or the profile predates recorded keys).
    """
    def key_of(item: Entry | FunctionKey) -> FunctionKey:
        return item if isinstance(item, FunctionKey) else record_key(item.report)

    candidates: list[Entry | FunctionKey] = list(profile.entries)
    matching = match(candidates, [key], key=key_of)
    if not matching.pairs:
        return None
    pair = matching.pairs[0]
    entry = pair.base
    assert isinstance(entry, Entry)
    if pair.how == EXACT:
        return Found(entry)
    recorded = entry.report.location
    if pair.how == MOVED:
        return Found(entry, f"matched by name and code: moved from {recorded}")
    return Found(entry, f"matched by module and name (recorded at {recorded}; its code differs or was not recorded)")
