"""The analysis stage: the fix plans (planner, program source, TensorFlow probe) written into a recorded session."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tfretrace.records.session import Session
from tfretrace.runtime.state import keras_rows_apart


class Analysis:
    """One monitor's analysis: plans made once per function and trace count, and what the probe ran.

    Recording (Monitor.record) reads only what the hooks saw; everything that reads the program's
    files or asks TensorFlow happens here, once, and is written into the session, so that every
    renderer draws from the session alone.
    """

    def __init__(self, root: str) -> None:
        self._root = root
        self._plans: Any = None  # the planner's cache, made (and its modules loaded) at the first analysis
        # Traces of the program's bodies the probe made, over every analysis of this monitor.
        self._bodies_run = 0

    def analyze(
        self, recorded: Session, on_error: Callable[[BaseException], None], *, probe: bool = False,
        lint: bool = False, models: Sequence[Any] | None = None,
    ) -> Session:
        """``recorded`` with each function's plan and the hashes of the files the plans edit.

        ``probe``: TensorFlow traces the generalized signatures of the program's live functions,
        which runs their Python again; only once the program has finished, and only where a plan
        is asked for (``run --fix-plan``, ``run --save``). The session then says how many times.
        ``lint``: the run's files are linted and each finding marked with what the run saw (the
        HTML report's panel), for a report drawn later from the session alone.
        ``models``: each recorded function's live Keras models; where the probe runs, those whose
        predict rows retraced are run again to see whether their rows are independent.
        """
        from tfretrace.fix.core.hashes import source_hashes

        functions = self._planned(recorded, on_error, probe, models)
        analyzed = replace(
            recorded, functions=functions, sources=source_hashes(functions, self._root),
            probe_traces=self._bodies_run if probe else recorded.probe_traces,
        )
        if lint:
            from tfretrace.runtime.lint_panel import lint_panel

            try:
                analyzed = replace(analyzed, lint=lint_panel(analyzed))
            except Exception as exc:  # the report goes on without the panel
                on_error(exc)
        return analyzed

    def _planned(
        self, recorded: Session, on_error: Callable[[BaseException], None], probe: bool,
        models: Sequence[Any] | None,
    ) -> tuple[Any, ...]:
        # The planner loads only once something retraced or XLA recompiled: a plan is empty
        # otherwise (plan_for, xla_steps), and its kinds take most of tfretrace's start-up.
        if not any(f.retraces or f.xla_compiles > 1 for f in recorded.functions):
            return keras_rows_apart(recorded.functions)
        from tfretrace.fix.planning.plan import PlanCache
        from tfretrace.runtime.predict_rows import settle_rows

        if self._plans is None:
            self._plans = PlanCache()
        live = None
        before = 0
        if probe:
            from tfretrace._tf.fresh import bodies_run
            from tfretrace._tf.keras_call_check import models_run
            from tfretrace.runtime.probe import probe_live

            live, before = probe_live(self._root), bodies_run() + models_run()
        kept = list(models) if models is not None and len(models) == len(recorded.functions) else None
        # The live models are asked only with the probe: running a model runs the program's Python.
        none: list[Any] = [()] * len(recorded.functions)
        settled = settle_rows(recorded.functions, kept or none, live=probe and kept is not None)
        functions = keras_rows_apart(self._plans.planned(settled, on_error, live))
        if probe:
            # The live models run by the call check count too: their layers' Python ran again.
            self._bodies_run += bodies_run() + models_run() - before
        return functions
