"""Inline SVG timeline of one function: cumulative calls and traces over time, retraces marked."""

from __future__ import annotations

import math
from collections.abc import Callable

from markupsafe import Markup, escape

from tfretrace.records.function_report import FunctionReport
from tfretrace.render import _model

WIDTH = 760
HEIGHT = 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 56, 14, 34
# A function with thousands of traces still gets a usable file: markers beyond this are skipped
# (the step line still shows them).
MAX_MARKERS = 1500
CALLS_COLOUR = "#2563eb"
TRACES_COLOUR = "#ea580c"
RETRACE_COLOUR = "#dc2626"
EXPECTED_COLOUR = "#6b7280"


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """Round tick values from 0 to at least ``top`` (1-2-5 steps)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    ticks = [0.0]
    while ticks[-1] < top - 1e-12:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _fmt_tick(value: float) -> str:
    return f"{value:g}" if value < 1e5 else f"{value:.2g}"


def timeline_svg(report: FunctionReport, wall_seconds: float, start: float = 0.0) -> Markup:
    """An ``<svg>`` element (safe markup) plotting calls and traces against session time.

    Calls and traces use their own y axes (left and right): in a retrace storm the two lines
    climb together; in a healthy function the trace line goes flat after the first step.
    The x axis begins at ``start`` (the session's first trace), not at zero: importing
    TensorFlow takes seconds and would squeeze all activity to the right edge.
    """
    events = report.events
    end = max([wall_seconds, *(e.time for e in events), 1e-6])
    step_ticks = nice_ticks(end - start, 5)
    lo = math.floor(start / step_ticks[1]) * step_ticks[1] if start > 0 else 0.0
    x_ticks = [round(lo + t, 10) for t in nice_ticks(end - lo, 5)]
    x_min, x_max = x_ticks[0], x_ticks[-1]
    calls_ticks = nice_ticks(max(report.calls, 1), 4)
    trace_ticks = nice_ticks(max(report.traces, *(e.index for e in events), 1), 4)
    plot_w = WIDTH - _LEFT - _RIGHT
    plot_h = HEIGHT - _TOP - _BOTTOM

    def x(t: float) -> float:
        return _LEFT + plot_w * ((t - x_min) / (x_max - x_min))

    def y(value: float, ticks: list[float]) -> float:
        return _TOP + plot_h * (1 - value / ticks[-1])

    out: list[str] = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}"'
        f' role="img" aria-label="{escape(_model.label(report))} timeline">'
    ]
    for tick in x_ticks:
        px = x(tick)
        out.append(
            f'<line class="grid" x1="{px:.1f}" y1="{_TOP}" x2="{px:.1f}" y2="{_TOP + plot_h}"/>'
            f'<text class="tick" x="{px:.1f}" y="{HEIGHT - 18}" text-anchor="middle">'
            f"{_fmt_tick(tick)}</text>"
        )
    for tick in calls_ticks:
        py = y(tick, calls_ticks)
        out.append(
            f'<line class="grid" x1="{_LEFT}" y1="{py:.1f}" x2="{_LEFT + plot_w}" y2="{py:.1f}"/>'
            f'<text class="tick" x="{_LEFT - 6}" y="{py + 4:.1f}" text-anchor="end" '
            f'fill="{CALLS_COLOUR}">{_fmt_tick(tick)}</text>'
        )
    for tick in trace_ticks:
        py = y(tick, trace_ticks)
        out.append(
            f'<text class="tick" x="{_LEFT + plot_w + 6}" y="{py + 4:.1f}" '
            f'fill="{TRACES_COLOUR}">{_fmt_tick(tick)}</text>'
        )
    out.append(
        f'<rect class="frame" x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}"/>'
        f'<text class="axis" x="{_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 3}" '
        f'text-anchor="middle">time since start (s)</text>'
        f'<text class="axis" transform="translate(13 {_TOP + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" fill="{CALLS_COLOUR}">calls</text>'
        f'<text class="axis" transform="translate({WIDTH - 8} {_TOP + plot_h / 2:.1f}) '
        f'rotate(90)" text-anchor="middle" fill="{TRACES_COLOUR}">traces</text>'
    )
    # No call happens before the function's first trace: a function that starts late stays
    # flat at zero until then, instead of a diagonal from the session start.
    # Both lines are drawn in time order: trace numbers follow when a trace began, times when it
    # was recorded, and a trace that encloses another (Keras' train step tracing its model) is
    # recorded after it. A cumulative count never falls: a recorded total below an earlier one
    # (a Keras row whose calls run through several tf.function objects) is drawn at the higher.
    timed = sorted(events, key=lambda e: (e.time, e.index))
    first = timed[0].time if timed else x_min
    calls_points = [(x_min, 0.0), (first, 0.0)]
    most = 0.0
    for event in timed:
        if event.calls_total is not None:
            most = max(most, float(event.calls_total))
            calls_points.append((event.time, most))
    calls_points.append((end, max(most, float(report.calls))))
    out.append(_polyline(calls_points, x, lambda v: y(v, calls_ticks), CALLS_COLOUR, "calls"))
    steps = [(x_min, 0.0)]
    for event in timed:
        # The highest trace number so far: kept events may skip numbers (events past the cap).
        steps += [(event.time, steps[-1][1]), (event.time, max(float(event.index), steps[-1][1]))]
    steps.append((end, steps[-1][1]))
    out.append(_polyline(steps, x, lambda v: y(v, trace_ticks), TRACES_COLOUR, "traces"))
    # Dense storms get small markers so the lines underneath stay visible.
    radius = 3.5 if len(events) <= 60 else 2.0
    for event in events[:MAX_MARKERS]:
        expected = not event.is_retrace
        colour = EXPECTED_COLOUR if expected else RETRACE_COLOUR
        tip = f"{_model.event_line(event)} at {event.time:.3f} s"
        if event.changes:
            tip += "\n" + "\n".join(c.line() for c in event.changes[:5])
        out.append(
            f'<circle class="{"expected" if expected else "retrace"}" '
            f'cx="{x(event.time):.1f}" cy="{y(event.index, trace_ticks):.1f}" '
            f'r="{radius}" fill="{colour}"><title>{escape(tip)}</title></circle>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def _polyline(
    points: list[tuple[float, float]],
    x: Callable[[float], float],
    y: Callable[[float], float],
    colour: str,
    css: str,
) -> str:
    coords = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
    return (
        f'<polyline class="{css}" points="{coords}" fill="none" stroke="{colour}" '
        f'stroke-width="2" stroke-linejoin="round"/>'
    )
