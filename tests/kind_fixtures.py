"""Per-kind fixture folders (tests/data/kinds/<kind>/), as ruff keeps one fixture per rule: plan and edit them.

Each folder holds ``program.py``, the session a real TensorFlow run of it saved (``session.json``, made by
tools/kind_fixtures.py), the plan expected from that session (``plan.json``) and the program as
``fix --apply --unsafe-fixes`` edits it (``expected.py``). Planning again from the session needs no
TensorFlow: the probe is not asked, so a kind TensorFlow decides is planned unsafe here, as it is for a
function the probe cannot reach.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "data" / "kinds"


def replanned(folder: Path) -> Any:
    """The folder's session with every function planned again from its events and the program now."""
    from tfretrace.fix.core.source import SourceReader
    from tfretrace.fix.planning.plan import with_plan
    from tfretrace.records.session import load

    session = load(folder / "session.json")
    reader = SourceReader(folder)
    return replace(session, functions=tuple(with_plan(replace(f, plan=()), reader) for f in session.functions))


def plan_rows(session: Any) -> list[dict[str, Any]]:
    """The plan's stable fields per function: each step's kind, cause, class, counts, what it changes, who makes it."""
    from tfretrace.fix.planning.step import plan_steps

    return [
        {"function": f.name, "traces": f.traces, "steps": [
            {"kind": s.kind, "cause": s.cause, "safety": s.safety, "by": s.by, "traces_before": s.traces_before,
             "traces_after": s.traces_after, "changes": s.changes, "edits": len(s.edits)}
            for s in plan_steps(f)]}
        for f in session.functions if f.plan
    ]


def edited(folder: Path, session: Any) -> str:
    """``program.py`` as ``fix --apply --unsafe-fixes`` writes it from the session's plans (not written here)."""
    from tfretrace.fix.applying.apply import prepare

    changes, _advice = prepare(session, folder, unsafe=True)
    texts = {c.path: c.after for c in changes}
    return texts.get("program.py", (folder / "program.py").read_text(encoding="utf-8"))
