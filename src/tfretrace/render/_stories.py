"""The grouped view of one function: its retraces folded into stories, its plan into fix lines.

Pure functions of the session's records (no rich, no ``fix/``): a story is one (cause, changed
arguments) pair with its count and the values the arguments took; a fix line is one plan step as
its safety, a few words, its effect, its code and at most one trailer. The terminal layout
(``render/_grouped.py``) and the size bench (``bench/report_size.py``) both read these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from textwrap import shorten
from typing import Any

from tfretrace._util.text import plural
from tfretrace.records.events import Change, TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.wording import float_text
from tfretrace.records.xla_events import FIRST_COMPILE

# A story lists the values an argument took up to this many; more read as ``k sizes: a .. b``.
MAX_VALUES = 5
# A fix headline's "what" and an unsafe reason are cut to these many words (the long form: -v).
WHAT_WORDS = 8
REASON_WORDS = 12
# A step TensorFlow was never asked about in a run that asked it nothing (a plain run): neither
# safe nor shown to be unsafe. The report's Check: line is then the run that asks.
UNCHECKED = "unchecked"
# Said once, in the footer, where any step is unchecked (render._grouped.footer).
UNCHECKED_NOTE = "unchecked: not asked of TensorFlow, a plain run reruns none of your code"
# The planner's header above a group of edited lines: ``# examples/train.py:55`` (and an aside).
_HEADER = re.compile(r"^# (\S+):(\d+)(,.*)?$")
_TYPE_WORDS = frozenset({"float", "int", "bool", "str", "complex"})

# The few words each fix kind is named by on its headline (the session's ``kind`` field). A kind
# missing here (a newer tfretrace's) is named by the first clause of its summary.
_WHAT = {
    "input-signature": "one input_signature",
    "reduce-retracing": "reduce_retracing=True",
    "tensor-argument": "pass it as a tensor",
    "cast-dtype": "cast to one dtype at the call",
    "neutral-key": "pass the optional key on every call",
    "zero-state": "pass a zero initial state",
    "drop-remainder": "drop the partial last batch",
    "element-spec": "one element_spec for the dataset",
    "hoist-def": "define it at module level",
    "hoist-wrap": "make the tf.function once",
    "hoist-factory-call": "call the factory once",
    "hoist-object": "make the argument object once",
    "hoist-pipeline": "build the pipeline once",
    "keras-call": "call the model instead of predict",
    "keras-pad": "pad predict inputs to one bucket",
    "keras-pad-rows": "pad predict rows to one bucket",
    "saved-signature": "the saver's input_signature",
    "wrap-vectorized-map": "vectorized_map inside one tf.function",
    "xla-bucket": "bucket varying dims",
    "xla-off": "turn XLA off",
}


@dataclass(frozen=True)
class Story:
    """Retraces of one function with one cause and the same changed arguments."""

    cause: str
    count: int
    # ``tokens dim 1``, ``lr``, ``token_ids``; empty when no argument changed (a new object).
    subject: str
    # ``4 -> 5 -> 6``, ``8 sizes: 4 .. 11``, ``list of len 3, 4, 2``; may be empty.
    values: str
    # Where the calls were made, only when the function was called from more than one place.
    site: str = ""
    # The argument paths that changed (the bench checks each is named).
    paths: tuple[str, ...] = ()
    # How many distinct values the one changed argument took; 0 for several arguments or none.
    distinct: int = 0
    # What ``distinct`` counts: ``tokens dim 1 sizes``, ``lr values``.
    noun: str = ""

    def line(self) -> str:
        """``21x shape-changed  tokens dim 1: 4 -> 5 -> 6``."""
        text = f"{self.count}x {self.cause}"
        if self.subject or self.values:
            text += "  " + ": ".join(part for part in (self.subject, self.values) if part)
        if self.site:
            text += f"  at {self.site}"
        return text


@dataclass(frozen=True)
class FixLine:
    """One plan step as the grouped view prints it."""

    # ``fix`` for the first step, ``then`` for one that builds on the step before, ``or`` for an
    # alternative to it (XLA steps), ``note`` for a statement that changes nothing.
    joiner: str
    # ``safe``, ``unsafe`` or ``by hand``; empty on a note.
    safety: str
    what: str
    effect: str
    code: str | None
    trailer: str

    def headline(self) -> str:
        """``fix [safe] one input_signature: 24 -> 1 trace, saves 1.48 s``, or ``note: ...``."""
        if self.joiner == "note":
            return f"note: {self.what}"
        return f"{self.joiner} [{self.safety}] {self.what}: {self.effect}"


def stories(report: FunctionReport) -> list[Story]:
    """The function's retraces and XLA recompiles folded by (cause, changed arguments), most first."""
    events: list[tuple[str, tuple[Change, ...], str | None, Any]] = [
        (e.cause, e.changes, e.call_site, e) for e in report.events if e.is_retrace
    ]
    events += [(x.cause, x.changes, None, None) for x in report.xla_events if x.cause != FIRST_COMPILE]
    sites = {site for _cause, _changes, site, _event in events if site}
    groups: dict[tuple[str, tuple[tuple[str, str, str], ...]], list[tuple[tuple[Change, ...], str | None, Any]]] = {}
    for cause, changes, site, event in events:
        # A shape's detail names the dimension (one story per dimension); any other detail is
        # per event (an object's id) and would split one story into many.
        key = (cause, tuple((c.path, c.kind, c.detail if c.kind == "shape" else "") for c in changes))
        groups.setdefault(key, []).append((changes, site, event))
    out = []
    for (cause, shape), members in groups.items():
        subjects, values = [], []
        distinct, noun = 0, ""
        for number, (path, kind, detail) in enumerate(shape):
            pairs = [(changes[number].before, changes[number].after) for changes, _site, _event in members]
            subjects.append(f"{path} {detail}" if kind == "shape" and detail else path)
            values.append(_values(kind, detail, pairs))
            if len(shape) == 1 and kind in ("shape", "python-value"):
                distinct = len(_seen(kind, detail, pairs))
                noun = f"{subjects[-1]} {'sizes' if kind == 'shape' else 'values'}"
        subject = "; ".join(subjects)
        value = "; ".join(v for v in values if v)
        if not shape:
            subject, value = _without_change(cause, [e for _c, _s, e in members if e is not None])
        site = ""
        if len(sites) > 1:
            # ``line 33`` where the call is in the function's own file.
            here = list(dict.fromkeys(_short_site(s, report.location) for _c, s, _e in members if s))
            site = here[0] + (f" and {len(here) - 1} more" if len(here) > 1 else "") if here else ""
        paths = tuple(p for p, _k, _d in shape)
        out.append(Story(cause, len(members), subject, value, site, paths, distinct, noun))
    return sorted(out, key=lambda s: -s.count)


def product_line(report: FunctionReport, found: list[Story]) -> str:
    """``8 tokens dim 1 sizes x 3 lr values = 24 traces`` when the traces are that product.

    It says why a function traced so often (each new lr traced every size again) and which fix
    pays most; printed only where the product of two stories' counts is exactly the traces.
    """
    # Two changed arguments; new objects times sizes is what the objects' story already says.
    counted = [s for s in found if s.distinct > 1 and s.paths]
    for first, one in enumerate(counted):
        for other in counted[first + 1:]:
            if one.noun != other.noun and one.distinct * other.distinct == report.traces:
                return f"{one.distinct} {one.noun} x {other.distinct} {other.noun} = {report.traces} traces"
    return ""


def _short_site(site: str, location: str) -> str:
    """``line 33`` for ``app.py:33`` when the function is defined in ``app.py``; else the site."""
    file, _, line = site.rpartition(":")
    return f"line {line}" if file and file == location.rpartition(":")[0] else site


def _values(kind: str, detail: str, pairs: list[tuple[str, str]]) -> str:
    """The values one changed argument took over a story's events, in the order first seen."""
    seen = _seen(kind, detail, pairs)
    if kind == "identity":
        return f"new {pairs[-1][1]} per call" if pairs else ""
    if len(seen) > MAX_VALUES and kind == "shape" and all(v.isdigit() for v in seen):
        numbers = sorted(int(v) for v in seen)
        return f"{len(seen)} sizes: {numbers[0]} .. {numbers[-1]}"
    if len(seen) > MAX_VALUES:
        return f"{seen[0]} -> {seen[1]} -> … -> {seen[-1]} ({len(seen)} values)"
    return _common_prefix(seen)


def _seen(kind: str, detail: str, pairs: list[tuple[str, str]]) -> list[str]:
    """The distinct values of a story's changes (a shape's one dimension), in the order first seen."""
    seen: list[str] = []
    for before, after in pairs:
        for text in (before, after):
            if kind == "shape" and detail:
                text = _dims(text, detail)
            elif kind == "python-value":
                # ``float 0.05`` names the type where it changed; the same type reads as the bare value.
                text = float_text(text)
                word, _, rest = text.partition(" ")
                if rest and word in _TYPE_WORDS:
                    text = rest
            if text not in seen:
                seen.append(text)
    return seen


def _dims(shape: str, detail: str) -> str:
    """``(8, 4)`` with detail ``dim 1`` -> ``4``; ``dims 0, 1`` -> ``(8, 4)`` kept whole."""
    words = detail.split()
    if len(words) != 2 or words[0] != "dim" or not words[1].isdigit():
        return shape
    parts = [p.strip() for p in shape.strip("()").split(",") if p.strip()]
    index = int(words[1])
    return parts[index] if index < len(parts) else shape


def _common_prefix(values: list[str]) -> str:
    """``list of len 3, 4, 2`` for three values that share the words before the last; else ``a -> b``."""
    split = [v.split(" ") for v in values]
    if len(values) > 1 and all(len(s) == len(split[0]) and len(s) > 1 for s in split) and all(
            s[:-1] == split[0][:-1] for s in split):
        return " ".join(split[0][:-1]) + " " + ", ".join(s[-1] for s in split)
    return " -> ".join(values)


def _without_change(cause: str, events: list[TraceEvent]) -> tuple[str, str]:
    """Subject and values of retraces no argument explains: the new models or function objects."""
    models = list(dict.fromkeys(e.keras.model for e in events if e.keras is not None))
    if len(models) > 1:
        shown = ", ".join(models[:3]) + (", …" if len(models) > 3 else "")
        return "", f"{len(models)} new models: {shown}"
    objects = {e.object_index for e in events}
    if len(objects) > 1:
        return "", f"{len(objects)} new tf.function objects"
    return "", ""


def fix_lines(report: FunctionReport, asked: bool = True) -> list[FixLine]:
    """The function's plan as fix lines: trace steps in plan order, then the XLA alternatives.

    ``asked``: the run asked TensorFlow about its plans (the session's ``probe_traces``); where it
    did not, a step unsafe only for want of an answer is ``unchecked``, and the next command asks.
    """
    steps = [s for s in report.plan if isinstance(s, dict)]
    traces = [s for s in steps if s.get("compiles_before") is None]
    xla = sorted((s for s in steps if s.get("compiles_before") is not None),
                 key=lambda s: -_number(s.get("seconds_saved")))
    out: list[FixLine] = []
    acting = 0
    for step in traces:
        if step.get("kind") == "statement":
            out.append(FixLine("note", "", _note(_local(str(step.get("summary", "")), report)), "", None, ""))
            continue
        out.append(_line("fix" if acting == 0 else "then", step, asked))
        acting += 1
    for number, step in enumerate(xla):
        joiner = "or" if number else ("fix" if acting == 0 else "then")
        out.append(_line(joiner, step, asked))
    return out


def _line(joiner: str, step: dict[str, Any], asked: bool = True) -> FixLine:
    kind = str(step.get("kind", ""))
    what = _WHAT.get(kind) or _words(str(step.get("summary", "")), WHAT_WORDS)
    seconds = _number(step.get("seconds_saved"))
    if step.get("compiles_before") is not None:
        effect = f"{step['compiles_before']} -> {plural(int(step.get('compiles_after') or 0), 'compile')}"
    else:
        effect = f"{step.get('traces_before')} -> {plural(int(step.get('traces_after', 0)), 'trace')}"
        if step.get("verified") is not None:
            effect += f" (measured {step['verified']})"
    effect += f", saves {_seconds(seconds)}" if seconds > 0 else ", removes nothing alone"
    code = step.get("code") if isinstance(step.get("code"), str) else None
    if step.get("by") == "hand" or not (step.get("edits") or kind == "saved-signature"):
        refused = step.get("refused")
        note = f"TensorFlow raised {shorten(str(refused), 64, placeholder=' …')}" if refused else ""
        return FixLine(joiner, "by hand", what, effect, code, note)
    if step.get("safety") == "safe":
        notes = ["checked by TensorFlow"] if step.get("checked") == "tensorflow" else []
        if step.get("changes"):
            notes.append(f"changes: {step['changes']}")
        return FixLine(joiner, "safe", what, effect, code, "; ".join(notes))
    if not asked and step.get("unasked") is True:
        return FixLine(joiner, UNCHECKED, what, effect, code, "")
    reason = _words(str(step.get("unsafe_reason") or "not classed safe"), REASON_WORDS)
    return FixLine(joiner, "unsafe", what, effect, code, f"unsafe: {reason}")


def shown_code(code: str, location: str, width: int | None = None) -> str:
    """A step's code as the report prints it, its ``# file:line`` headers made short.

    The planner heads each group of edited lines with ``# file:line``. In the function's own file
    the header says ``# line N``, at the end of the group's first line where that fits ``width``;
    a first header naming the headline's own ``file:line`` goes, and so do blank lines. The code
    lines themselves are untouched.
    """
    own_file = location.rsplit(":", 1)[0]
    # Blank lines between the edited lines are spacing, not code: the report shows the code alone.
    lines = [line for line in code.split("\n") if line.strip()]
    if len(lines) > 1 and lines[0].strip() == f"# {location}" and "\n".join(lines[1:]).strip():
        lines = lines[1:]
    out: list[str] = []
    number = 0
    while number < len(lines):
        line = lines[number]
        found = _HEADER.match(line)
        if found is None or found.group(1) != own_file:
            out.append(line)
            number += 1
            continue
        short = f"# line {found.group(2)}{found.group(3) or ''}"
        after = lines[number + 1] if number + 1 < len(lines) else ""
        joined = f"{after}  {short}"
        if after.strip() and not after.lstrip().startswith("#") and (width is None or len(joined) <= width):
            out.append(joined)
            number += 2
        else:
            out.append(short)
            number += 1
    return "\n".join(out)


def _words(text: str, most: int) -> str:
    """The first clause of ``text`` (before a colon, semicolon or parenthesis), at most ``most`` words."""
    for mark in (" (", ": ", "; "):
        head = text.split(mark, 1)[0]
        if head.strip():
            text = head
    words = text.split()
    return " ".join(words[:most]) + (" …" if len(words) > most else "")


def _local(text: str, report: FunctionReport) -> str:
    """``text`` with places in the function's own file named ``line N`` (the headline names the file)."""
    where = report.keras.built_at if report.keras is not None and report.keras.built_at else report.location
    own_file = where.rsplit(":", 1)[0]
    return re.sub(re.escape(own_file) + r":(\d+)", r"line \1", text) if own_file else text


def _note(summary: str) -> str:
    """A statement's first sentence part without its parenthesized asides, at most 24 words."""
    kept, depth = [], 0
    for char in summary:
        depth += char == "("
        if depth == 0:
            kept.append(char)
        depth -= char == ")" and depth > 0
    text = " ".join("".join(kept).split("; ", 1)[0].split()).replace(" :", ":").replace(" ,", ",")
    words = text.split()
    return " ".join(words[:24]) + (" …" if len(words) > 24 else "")


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _seconds(seconds: float) -> str:
    if seconds < 1.0:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"
