"""Finding a live tf.function's entry in a profile by its FunctionKey (exact, then the reported fallbacks)."""

from __future__ import annotations

from dataclasses import dataclass

from tfretrace.records.function_key import EDITED, EXACT, MOVED, FunctionKey
from tfretrace.records.matching import match
from tfretrace.runtime.prevent.profile import Entry, Profile


@dataclass(frozen=True)
class Found:
    """The matching entry, and how it was matched when not exactly (said in the report)."""

    entry: Entry
    fallback: str | None = None
    # The function's code differs from the code the profile recorded (both hashes known): its
    # recorded calls may not fit the code as it is now, so it is not warmed.
    stale: bool = False


def find(profile: Profile, key: FunctionKey) -> Found | None:
    """The profile entry for a function met in this run, or None.

    Exact key first; then the same code under the same name elsewhere (the file moved); then the
    same module and name (the code was edited, or the profile predates recorded keys).
    """
    def key_of(item: Entry | FunctionKey) -> FunctionKey:
        return item if isinstance(item, FunctionKey) else item.key

    candidates: list[Entry | FunctionKey] = list(profile.entries)
    matching = match(candidates, [key], key=key_of)
    if not matching.pairs:
        return None
    pair = matching.pairs[0]
    entry = pair.base
    assert isinstance(entry, Entry)
    if pair.how == EXACT:
        return Found(entry)
    recorded = entry.location
    if pair.how == MOVED:
        return Found(entry, f"matched by name and code: moved from {recorded}")
    was = key_of(entry).code_hash
    if pair.how == EDITED and was is not None and key.code_hash is not None and was != key.code_hash:
        return Found(entry, f"stale: its code changed since the profile recorded it at {recorded}; not warmed", True)
    return Found(entry, f"matched by module and name (recorded at {recorded}; its code could not be compared: "
                        "the profile predates code keys or the source is unreadable)")
