"""Learning: a run's calls widen the profile it was warmed from, so the next run warms for them too."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tfretrace._util.file_lock import exclusive
from tfretrace._util.text import printable
from tfretrace.records.session import Session
from tfretrace.runtime.prevent.profile import Profile


@dataclass(frozen=True)
class Learned:
    """What a run added to its profile: signatures, and the file written (None: not written, and why)."""

    added: int
    written: str | None
    note: str | None


def learn(profile: Profile, session: Session) -> tuple[Profile, Learned]:
    """Widen ``profile`` with what ``session`` met and write it back when it grew (atomically).

    A saved session used as a profile is never rewritten (it is the record of a run, not a
    profile): the note says how to make a profile file of it. The profile only ever widens: no
    recorded call is forgotten, so a run never loses what an earlier run taught.
    """
    if not profile.learnable:
        _, added = profile.widened(session)
        note = None
        if added:
            shown = printable(profile.path)
            note = (f"{added} call signature(s) met outside the profile were not kept: {shown} is a saved session "
                    f"(tfretrace profile merge {shown} -o profile.json makes a profile file a run widens)")
        return profile, Learned(added, None, note)
    # Read, widen and replace under one lock: runs that end together (a worker pool, a job
    # sweep) each widen the file as the one before left it, so no run's calls are lost and
    # "widened" is said only of signatures the file now holds.
    try:
        with exclusive(profile.path):
            return _widen_file(profile, session)
    except OSError as exc:
        return profile, Learned(0, None, f"profile {printable(profile.path)} not widened: {exc.strerror or exc}")


def _widen_file(profile: Profile, session: Session) -> tuple[Profile, Learned]:
    """Widen the file as it is now (another process may have widened it since this run read it)."""
    from tfretrace.records.session import SessionFormatError
    from tfretrace.runtime.prevent.profile_file import read_profile, write_profile

    try:
        profile = read_profile(profile.path, missing_ok=True)
    except SessionFormatError as exc:
        return profile, Learned(0, None, f"profile not widened: {exc}")
    widened, added = profile.widened(session)
    if not added and profile.runs:
        return profile, Learned(0, None, None)
    widened = replace(widened, runs=profile.runs + 1)
    try:
        written = write_profile(widened)
    except OSError as exc:
        return profile, Learned(added, None, f"profile {printable(profile.path)} not widened: {exc.strerror or exc}")
    return widened, Learned(added, written, None)
