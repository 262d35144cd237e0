"""``fix --verify``'s answer to "does the edited program print what the recorded run printed?" (stdout).

The recorded run's stdout digest (``run --save``) against the edited run's. When they differ, an
unedited copy is run the same way (same folder layout, same output file) before anything is
blamed on the edit: a program whose output holds times, paths or unseeded draws prints something
else on every run, and a run recorded on a terminal may print otherwise than one writing to a
file (Keras draws its progress bar only on a terminal). The unedited copy tells them apart:

- it prints what the recorded run printed: the edit changed the output (``differs``);
- it prints something else: the recorded output is not what this program prints when run again
  (``unstable``), and nothing is blamed on the edit; ``edited_as_unedited`` says whether the
  edited and unedited copies at least printed the same (then the edit changed nothing visible).

The rerun costs a second run of the program, and is only made when the outputs differ and the
edited run succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfretrace.records.output import OutputDigest, first_difference

# The verdicts, fixed words that scripts read (the session's ``verified_output.verdict``).
SAME, DIFFERS, UNSTABLE, NOT_RECORDED, NOT_MEASURED = "same", "differs", "unstable", "not-recorded", "not-measured"
RECORDED, UNEDITED = "recorded", "unedited"


@dataclass(frozen=True)
class StdoutCheck:
    """Whether the edited run's stdout matched, compared with which run, and where it first parts."""

    verdict: str  # SAME, DIFFERS, UNSTABLE, NOT_RECORDED or NOT_MEASURED
    compared_with: str | None = None  # RECORDED or UNEDITED; None when nothing was compared
    first_difference_line: int | None = None  # 1-based; None: same, or past the kept lines
    recorded: OutputDigest | None = None
    edited: OutputDigest | None = None
    unedited: OutputDigest | None = None  # the unedited copy's run, when one was made

    @property
    def edited_as_unedited(self) -> bool | None:
        """Whether the edited and the unedited copy printed the same (None: no unedited run)."""
        if self.unedited is None or self.edited is None:
            return None
        return self.edited.same_as(self.unedited)

    def to_dict(self) -> dict[str, Any]:
        """The session's ``verified_output``."""
        return {"verdict": self.verdict, "compared_with": self.compared_with,
                "first_difference_line": self.first_difference_line,
                "edited_as_unedited": self.edited_as_unedited}

    def describe(self) -> str:
        """One line for the text report: the verdict word, then what it rests on."""
        where = f" from line {self.first_difference_line}" if self.first_difference_line is not None else ""
        if self.verdict == NOT_RECORDED:
            return f"{self.verdict}: the session has no stdout digest (a run without --save or --fix-plan records none)"
        if self.verdict == NOT_MEASURED:
            return f"{self.verdict}: the edited run gave no session"
        assert self.recorded is not None and self.edited is not None
        if self.verdict == SAME:
            detail = f"as the recorded run ({self.edited.lines} line{'s' if self.edited.lines != 1 else ''})"
        elif self.verdict == DIFFERS and self.unedited is not None:
            detail = f"the edit changed it{where} (an unedited copy prints what the recorded run printed)"
        elif self.verdict == DIFFERS:
            detail = f"not the recorded run's{where} (no unedited run to tell whether the edit did it)"
        elif self.edited_as_unedited:
            how = " (the recorded run's stdout was a terminal, the copies' a file)" if self.recorded.terminal else ""
            detail = (f"an unedited copy does not print the recorded output either{how}; edited and unedited "
                      "copies print the same, so the edit changed nothing visible")
        else:
            detail = (f"an unedited copy prints something else too: the output changes from run to run, "
                      f"not blamed on the edit (edited vs unedited{where})")
        return f"{self.verdict}: {detail}"


def check_stdout(recorded: OutputDigest | None, edited: OutputDigest | None,
                 rerun: Callable[[], OutputDigest | None] | None) -> StdoutCheck:
    """Compare; ``rerun`` runs an unedited copy the edited one's way (None: do not, e.g. the edited run failed)."""
    if recorded is None:
        return StdoutCheck(NOT_RECORDED, edited=edited)
    if edited is None:
        return StdoutCheck(NOT_MEASURED, recorded=recorded)
    if edited.same_as(recorded):
        return StdoutCheck(SAME, RECORDED, None, recorded, edited)
    unedited = rerun() if rerun is not None else None
    if unedited is None or unedited.same_as(recorded):
        return StdoutCheck(DIFFERS, RECORDED, first_difference(recorded, edited), recorded, edited, unedited)
    return StdoutCheck(UNSTABLE, UNEDITED, first_difference(unedited, edited), recorded, edited, unedited)
