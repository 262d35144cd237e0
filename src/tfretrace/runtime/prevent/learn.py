"""Learning: a run's calls widen the profile it was warmed from, so the next run warms for them too."""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    from tfretrace.records.session import SessionFormatError
    from tfretrace.runtime.prevent.profile_file import read_profile, write_profile

    if profile.learnable:
        # Widen the file as it is now, not as this run read it: another process (a rank, a
        # parallel job) may have widened it meanwhile, and its calls must not be lost.
        try:
            profile = read_profile(profile.path, missing_ok=True)
        except SessionFormatError as exc:
            return profile, Learned(0, None, f"profile not widened: {exc}")
    widened, added = profile.widened(session)
    if not profile.learnable:
        note = None
        if added:
            shown = printable(profile.path)
            note = (f"{added} call signature(s) met outside the profile were not kept: {shown} is a saved session "
                    f"(tfretrace profile merge {shown} -o profile.json makes a profile file a run widens)")
        return profile, Learned(added, None, note)
    if not added and profile.runs:
        return profile, Learned(0, None, None)
    widened = replace(widened, runs=profile.runs + 1)
    try:
        written = write_profile(widened)
    except OSError as exc:
        return profile, Learned(added, None, f"profile {printable(profile.path)} not widened: {exc.strerror or exc}")
    return widened, Learned(added, written, None)
