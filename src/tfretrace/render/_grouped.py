"""The default terminal report's function blocks: headline, one line per story, the fix, one footer.

A function reads in a few lines: what it cost, which arguments changed and how (grouped over all
its retraces), then each plan step as one headline with its code. The per-trace list, the long
reasons and the Why/Fix paragraphs are ``-v``'s, the HTML's and the JSON's.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from tfretrace._util.text import plural
from tfretrace.records import catalogue
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session
from tfretrace.render import _model
from tfretrace.render._code import Code, fit
from tfretrace.render._layout import indent, prose
from tfretrace.render._stories import UNCHECKED_NOTE, fix_lines, product_line, shown_code, stories

# A function's block stops adding later steps' code beyond this many lines (the first step's code
# is always printed: it is the fix); the rest is in -v and ``tfretrace fix``.
BLOCK_LINES = 12
# The ranked table is printed above the blocks only when more functions than this retraced
# (the blocks' headlines carry its figures), or when none did.
TABLE_ABOVE = 6
# Code longer than this many lines is left to -v and ``tfretrace fix`` (a helper, not an edit).
CODE_LINES = 5
_CODE_INDENT = 6
_MORE = "; code: -v"


def function_block(report: FunctionReport, session: Session, width: int, color: bool) -> RenderableType:
    """One retracing function in the grouped view (a blank line above it)."""
    name, figures = headline(report, session)
    if len(name.plain) + 2 + len(figures) <= width:
        name.append("  " + figures)
        parts: list[RenderableType] = [name]
    else:  # the figures on a line of their own, never split
        parts = [indent(name, 0, hang=2), indent(prose(figures), 2, hang=2)]
    for extra in function_extras(report):
        parts.append(indent(prose(extra, "yellow"), 2, hang=2))
    if report.megamorphic:
        parts.append(indent(prose(_model.megamorphic_line(report), "bold yellow"), 2, hang=2))
    found = stories(report)
    for story in found:
        line = prose("")
        head, _, tail = story.line().partition("  ")
        line.append(head, style="bold red")
        if tail:
            line.append("  " + tail)
        parts.append(indent(line, 2, hang=4))
    product = product_line(report, found)
    if product:
        parts.append(indent(prose(product), 2, hang=4))
    used = len(parts)
    for number, fix in enumerate(fix_lines(report, asked=session.probe_traces is not None)):
        if fix.joiner == "note":  # two lines at most: the whole statement is -v's
            note = fix.headline()
            note = note if len(note) <= width - 2 else _one_line(note, 2 * (width - 6))
            parts.append(indent(prose(note, "dim"), 2, hang=4))
            used += 1 + (len(note) > width - 2)
            continue
        style = "bold green" if fix.safety == "safe" else "bold yellow"
        room = max(20, width - _CODE_INDENT)
        code = fit(shown_code(fix.code, report.location, room), room) if fix.code else ""
        rows = code.count("\n") + 1 if code else 0
        # The first step's code always shows (it is the fix); a later step's only where it is
        # written (by --apply, or by hand: not an unsafe or unchecked edit), the block stays short
        # and the code is an edit, not a helper.
        written = fix.safety in ("safe", "by hand")
        later = written and rows <= CODE_LINES and used + rows + 2 <= BLOCK_LINES
        shown = bool(code) and (number == 0 or later)
        head, trailer = fix.headline(), fix.trailer
        if code and not shown:  # where the code is: on the headline where it fits, else the trailer
            if not trailer and len(head) + len(_MORE) <= width - 2:  # the headline is 2 in
                head += _MORE
            else:
                trailer = "; ".join(t for t in (trailer, _MORE[2:]) if t)
        parts.append(indent(prose(head, style), 2, hang=4))
        used += 1
        if shown:
            parts.append(indent(Code(code, color), _CODE_INDENT))
            used += rows
        if trailer:
            parts.append(indent(prose(trailer, "dim"), _CODE_INDENT, hang=2))
            used += 1
    return Group(Text(""), *parts)


def headline(report: FunctionReport, session: Session) -> tuple[Text, str]:
    """``train_step  demo.py:43`` and ``24 traces, 36 calls  1.54 s  25.4%``."""
    line = prose(_model.label(report), "bold")
    where = report.location
    if report.keras is not None and report.keras.built_at:
        where = f"model built at {report.keras.built_at}"
    line.append(f"  {where}", style="dim")
    # A function traced once and compiled often is an XLA story: its one trace goes unsaid.
    parts = [] if report.xla_compiles > 1 and report.traces == 1 else [plural(report.traces, "trace")]
    if report.xla_compiles:
        parts.append(plural(report.xla_compiles, "XLA compile"))
    counts = ", ".join([*parts, plural(report.calls, "call")])
    if report.objects > 1:
        counts += f", {report.objects} tf.function objects"
    seconds = report.trace_seconds + report.xla_compile_seconds
    # The share is of the seconds shown beside it (tracing and compiling), of the process's wall.
    wall = session.wall_of(report.worker)
    share = _model.fmt_share(seconds / wall if wall > 0 else 0.0)
    return line, f"{counts}  {_headline_seconds(seconds)}  {share}"


def _headline_seconds(seconds: float) -> str:
    """``1.54 s``, ``495 ms``, ``6.5 ms``: three figures at most, so that a headline fits one line."""
    if 0.01 <= seconds < 1.0:
        return f"{seconds * 1000:.0f} ms"
    return _model.fmt_seconds(seconds)


def footer(session: Session, width: int) -> list[RenderableType]:
    """One pointer to the explanations of every cause shown, then where the long form is."""
    counts: dict[str, int] = {}
    for report in _model.retracing_functions(session):
        for story in stories(report):
            counts[story.cause] = counts.get(story.cause, 0) + story.count
    codes = []
    for slug in sorted(counts, key=lambda s: (-counts[s], s)):
        try:
            codes.append((catalogue.get(slug).code, slug))
        except KeyError:  # a cause a newer tfretrace named
            continue
    out: list[RenderableType] = [Text("")]
    retracing = _model.retracing_functions(session)
    others = [f for f in _model.ranked_functions(session) if f not in retracing]
    if others:
        out.append(indent(prose(others_line(others, retracing), "dim"), 0, hang=2))
    # One line where it fits: the first cause named, then the codes alone, then two lines.
    more = "Every trace and the long reasons: -v, or -o report.html"
    if codes:
        tail = "; every trace: -v"
        also = "; also " + ", ".join(code for code, _slug in codes[1:]) if len(codes) > 1 else ""
        named = f"Why: tfretrace explain {codes[0][0]} ({codes[0][1]}){also}"
        bare = "Why: tfretrace explain " + ", ".join(code for code, _slug in codes)
        why = next((form + tail for form in (named, bare) if len(form + tail) <= width), None)
        if why is None:
            why = named if len(named) <= width else bare
        else:
            more = ""
        out.append(indent(prose(why, "dim"), 0, hang=2))
    if more:
        out.append(indent(prose(more, "dim"), 0, hang=2))
    unasked = any(step.get("unasked") is True for report in retracing for step in report.plan
                  if isinstance(step, dict))
    if session.probe_traces is None and unasked:
        out.append(indent(prose(UNCHECKED_NOTE, "dim"), 0, hang=2))
    return out


def function_extras(report: FunctionReport) -> list[str]:
    """Lines about what the monitor could not record for this function."""
    extras = []
    if report.failed_traces:
        extras.append(f"{report.failed_traces} trace(s) raised an exception")
    if report.refused_traces:
        extras.append(f"{report.refused_traces} trace(s) refused by a budget")
    if report.earlier_traces:
        extras.append(
            f"{report.earlier_traces} of the traces were made before the monitor met it "
            "(read from TensorFlow's cache: no call site or cost)"
        )
    if report.dropped_events:
        extras.append(f"{report.dropped_events} trace event(s) were not recorded (event cap)")
    return extras


def others_line(others: list[FunctionReport], shown: list[FunctionReport]) -> str:
    """``Traced only as expected: eval_step, future_fn and 2 more`` (their figures: -v).

    A name that a block above also has (a pipeline built twice) gets its location too.
    """
    taken = {_model.label(f) for f in shown}
    names = [_model.label(f) + (f" ({f.location})" if _model.label(f) in taken else "") for f in others[:4]]
    more = f" and {len(others) - 4} more" if len(others) > 4 else ""
    return f"Traced only as expected: {', '.join(names)}{more}"


def _one_line(text: str, width: int) -> str:
    """``text`` cut at a word to fit ``width``, with ``…`` where it was cut."""
    if len(text) <= width:
        return text
    words = text.rstrip(" …").split()
    while words and len(" ".join(words)) + 2 > width:
        words.pop()
    return " ".join(words) + " …"
