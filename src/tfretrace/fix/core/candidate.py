"""The record every fix kind produces, and what the kinds share: the function's context and its calls."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from tfretrace.fix.core.defs import callee_name
from tfretrace.fix.core.predict import Call, Config, Replay
from tfretrace.fix.core.rules import literal_key
from tfretrace.fix.core.source import CallInfo, DefInfo, Replacement, SourceReader, Span, is_user_path
from tfretrace.records.events import PYTHON, Leaf
from tfretrace.records.function_report import FunctionReport


@dataclass(frozen=True)
class State:
    """The function's calls and declaration after the fixes chosen so far."""

    replay: Replay
    config: Config
    # An advice step (done by hand) changed what the calls pass: a declaration written for those
    # calls would reject the program as it is, so it is advice too.
    signature_advice: bool = False
    # A hoist step moved the def to module level: a later declaration edits the moved copy.
    moved: bool = False
    # keras-pad-rows rewrote the model's predict calls: no other predict edit goes at those calls.
    keras_padded: bool = False
    # hoist-def moved a nested def that closes over nothing to module level: a later step is asked of
    # TensorFlow with that def as the hoist writes it (FunctionContext.edited), not the nested one.
    hoisted: bool = False
    # The edits earlier steps make in the function's body (tf.constant -> tf.convert_to_tensor): a
    # later step is asked of TensorFlow with the body as they leave it (FunctionContext.edited).
    body: tuple[Replacement, ...] = ()

    def map_calls(self, change: dict[int, Call | None]) -> State:
        """Calls replaced (or dropped, for None) by call index."""
        calls = []
        for call in self.replay.calls:
            new = change.get(call.index, call)
            if new is not None:
                calls.append(new)
        return replace(self, replay=self.replay.with_calls(calls))


# TensorFlow's answer for a Python value passed as a tensor: the dtype it traced the body with (or
# None), what it said where no dtype did, where the graph depends on the value (runtime.probe), and
# on how many inputs TensorFlow ran a recorded trace and the tensor's trace to the same results.
Verdict = tuple[str | None, str | None, str | None, int]

# The function as body edits leave it, for the probe: the edited file's text and the def's line.
Edited = tuple[str, int]


@dataclass(frozen=True)
class Candidate:
    """One fix for one root cause: what to write, where, and the calls and declaration it leaves."""

    cause: str
    kind: str
    summary: str
    code: str | None
    edits: tuple[Replacement, ...] = ()
    state: State | None = None  # None: a statement, nothing changes
    final: bool = False
    pinned: str | None = None  # an input_signature's dims that stay pinned, and why
    python_use: str | None = None  # a statement: the body's uses that need the Python value
    safety: str | None = None  # the kind's class (fix.kinds), set by the planner
    # A generalized signature, or a Python value as a tensor of one dtype, traced by TensorFlow
    # (fix.planning.safety_plan): "tensorflow" where the probe found the same outputs, else what TensorFlow said
    # (signatures only); None where no probe ran (no live function).
    tf_check: str | None = None
    unsafe_reason: str | None = None
    # A kind whose maker checks its own conditions (KindSafety's ``maker_checks``): why they do not
    # hold here (the step is then unsafe), None where they do.
    condition: str | None = None
    # Inputs on which TensorFlow ran a recorded trace and the step's trace to the same results (0: none run).
    compared: int = 0
    # What the step changes in the results, where its maker read it from TensorFlow's answer (keras-call:
    # float-last-digits where predict and the call agreed only in the last digits); None: the kind says.
    changes: str | None = None
    # What TensorFlow raised tracing the edit as written (records.events.TraceRefused): the step is left by hand.
    refused: str | None = None


@dataclass
class FunctionContext:
    """What the fix kinds know about one function: its report, its def, its call sites."""

    report: FunctionReport
    reader: SourceReader
    definition: DefInfo | None
    short: str
    calls_seen: dict[str, CallInfo | None] = field(default_factory=dict)
    random: str | None = None  # a random draw in the body: every step that removes traces is unsafe
    # Traces the live function with a signature text and says why it differs (None: the same);
    # only in the recorded run, once the program has finished (runtime.monitor).
    # A second argument, the body as earlier steps edit it (``edited``), where they do.
    probe: Callable[..., str | None] | None = None
    # Traces the live function with a Python argument as a scalar tensor of each dtype given: the
    # first that traces as the run did, else None and what TensorFlow said (None, None: not asked),
    # and, third, where the graph depends on the value (None: every trace used it only as data).
    # A third argument, as ``probe``'s second: the body as the step edits it.
    probe_argument: Callable[..., Verdict] | None = None
    # The random op the run's traces drew from with no seed, read from TensorFlow once the run is
    # over (None: seeded, or not asked): a stream no run could repeat, so fewer traces keep nothing.
    probe_seed: Callable[[], str | None] | None = None
    # Runs each recorded trace that got None for an argument beside the trace with a zero tensor of a
    # shape and dtype there (zero-state): on how many inputs both computed the same, and where not.
    probe_zeros: Callable[[str, tuple[int, ...], str], tuple[int, str | None]] | None = None
    # Traces each recorded call with the tensor parameters given opened to those shapes, Python values as
    # recorded (reduce_retracing's relaxed trace), and runs both: None where they agree, else why not.
    probe_relaxed: Callable[[dict[str, tuple[int | None, ...]]], str | None] | None = None
    # Runs each recorded trace that got a list for an argument beside the trace with its elements as a tuple: on how
    # many inputs both computed the same, and where not.
    probe_as_tuple: Callable[[str], tuple[int, str | None]] | None = None
    # Runs one fresh function of a nested def's first object beside every recorded trace of every object its
    # outer def made: None where all agree (one object made once computes what each did), else why not.
    probe_one_object: Callable[[], str | None] | None = None
    unseeded: str | None = None  # its answer, once asked (fix.planning.safety_plan)
    # Its verdicts, asked once per argument, dtypes and body edits: the planner asks at every step.
    argument_verdicts: dict[tuple[str, tuple[str, ...], tuple[tuple[Span, str], ...], bool], Verdict] = field(
        default_factory=dict
    )

    @property
    def tf(self) -> str:
        """The user's name for the tensorflow module."""
        alias = self.definition.tf_alias if self.definition is not None else None
        return alias or "tf"

    @property
    def names(self) -> tuple[str, ...]:
        """The names the function is called by: its own, and the name a ``tf.function(f)`` call is bound to."""
        names = {self.short, self.report.name.rsplit(".", 1)[-1]}
        wrap = self.definition.wrap_call if self.definition is not None else None
        parsed = self.reader.module(wrap.path) if wrap is not None else None
        if wrap is not None and parsed is not None:
            # `tf_f = tf.function(f)` (or `self.step = tf.function(self._step)`): the calls are tf_f(...).
            for node in ast.walk(parsed[1]):
                if (
                    isinstance(node, ast.Assign)
                    and (node.value.lineno, node.value.col_offset) == (wrap.line, wrap.col)
                    and len(node.targets) == 1
                ):
                    bound = callee_name(node.targets[0])
                    if bound is not None:
                        names.add(bound)
        return tuple(sorted(names))

    def tensor_dtype(
        self, param: str, dtypes: tuple[str, ...], body: tuple[Replacement, ...] = (), hoisted: bool = False
    ) -> Verdict:
        """TensorFlow's verdict on ``param`` as a scalar tensor of each of ``dtypes`` (see ``probe_argument``).

        ``body``: the edits the step (and those before it) make in the body; the def so edited is
        what TensorFlow traces and runs. ``hoisted``: a hoist-def step moved the nested def to module
        level (``State.hoisted``); the def as it writes it is asked. Not asked where it cannot be made.
        """
        key = (param, dtypes, tuple((e.span, e.text) for e in body), hoisted)
        if key not in self.argument_verdicts:
            asked = self.probe_argument
            edited = self.edited(body, hoisted) if body or hoisted else None
            if asked is None or ((body or hoisted) and edited is None):
                verdict: Verdict = (None, None, None, 0)
            else:
                verdict = asked(param, dtypes) if edited is None else asked(param, dtypes, edited)
            self.argument_verdicts[key] = verdict
        return self.argument_verdicts[key]

    def signature_said(self, signature: str, body: tuple[Replacement, ...] = (), hoisted: bool = False) -> str | None:
        """What TensorFlow said of the signature text (None: traced as the run did), ``body`` edited and the
        def ``hoisted`` as in ``tensor_dtype``; the caller checks that ``probe`` is set."""
        assert self.probe is not None
        if not body and not hoisted:
            return self.probe(signature)
        edited = self.edited(body, hoisted)
        if edited is None:
            return "TensorFlow was not asked: tfretrace could not make the def as the earlier steps edit it"
        return self.probe(signature, edited)

    def edited(self, body: tuple[Replacement, ...], hoisted: bool = False) -> Edited | None:
        """The def's file with ``body`` (edits inside the def) applied, and the def's line; None where they are not.

        ``hoisted``: the def alone, its decorators included, dedented as the hoist writes it at module
        level (fix.core.hoist), and its line in that text.
        """
        definition = self.definition
        node = None if definition is None else definition.node
        parsed = None if definition is None else self.reader.module(definition.path)
        if definition is None or node is None or parsed is None:
            return None
        last = node.end_lineno or node.lineno
        if any(e.span.path != definition.path or e.span.line < node.lineno or e.span.end_line > last for e in body):
            return None  # only the body's own edits are made here
        lines = [line.encode("utf-8") for line in parsed[0].splitlines(keepends=True)]
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        data = b"".join(lines)
        spans = sorted(((starts[e.span.line - 1] + e.span.col, starts[e.span.end_line - 1] + e.span.end_col, e.text)
                        for e in body), reverse=True)
        if any(later[0] < earlier[1] for later, earlier in itertools.pairwise(spans)):
            return None  # overlapping edits: not one text
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        end = starts[min(last, len(lines))]
        for start, stop, text in spans:
            data = data[:start] + text.encode("utf-8") + data[stop:]
            end += len(text.encode("utf-8")) - (stop - start)
        if not hoisted:
            return data.decode("utf-8"), node.lineno
        block = data[starts[first - 1]:end].decode("utf-8").splitlines(keepends=True)
        # As fix.core.hoist writes it: the def's own indentation removed from every line.
        moved = "".join(line[node.col_offset:] if line.strip() else line.lstrip(" \t") for line in block)
        return moved, node.lineno - first + 1

    def call_info(self, site: str | None) -> CallInfo | None:
        """The user's call expression at a call site (user files only)."""
        if site is None or not is_user_path(site.rpartition(":")[0]):
            return None
        if site not in self.calls_seen:
            params = self.definition.params if self.definition is not None else ()
            self.calls_seen[site] = self.reader.call_at(site, self.names, params)
        return self.calls_seen[site]

    def all_sites(self, calls: Sequence[Call]) -> list[str]:
        """The recorded call sites, then every other call of the function in the same files.

        A call that hit the cache was never recorded; a call-site fix must reach it too, or it
        would keep passing the old form and trace again next to the edited calls.
        """
        sites = self.sites(calls)
        files = list(dict.fromkeys(site.rpartition(":")[0] for site in sites))
        for path in files:
            for line in self.reader.call_lines(path, self.names):
                site = f"{path}:{line}"
                if site not in sites and self.call_info(site) is not None:
                    sites.append(site)
        return sites

    def sites(self, calls: Sequence[Call]) -> list[str]:
        """Distinct user call sites of these calls, in order of appearance."""
        seen: list[str] = []
        for call in calls:
            if call.site is not None and call.site not in seen:
                seen.append(call.site)
        return seen

    def arg_edits(
        self, calls: Sequence[Call], param: str, wrap: str, keep: Sequence[str] = ()
    ) -> tuple[tuple[Replacement, ...], list[str]]:
        """Wrap the expression passed for ``param`` at every call site but ``keep``: edits, and the sites not found.

        ``wrap`` is a format string with ``{expr}`` and ``{tf}`` (that file's name for tensorflow);
        ``keep``: sites whose calls already pass what the edit makes (a tensor), left as they are.
        """
        edits: list[Replacement] = []
        missing: list[str] = []
        recorded = set(self.sites(calls))
        params = self.definition.params if self.definition is not None else ()
        for site in self.all_sites(calls):
            if site in keep:
                continue
            # Every call on the line: `a = f(x, 1); b = f(x, 2)` is two calls to edit.
            infos = self.reader.calls_at(site, self.names, params) if self.call_info(site) is not None else []
            found_all = [info.arg(param) for info in infos]
            alias = self.reader.tf_alias(site.rpartition(":")[0])
            if not found_all or any(f is None for f in found_all) or alias is None:
                # A call that passes nothing for it, or a file with no `import tensorflow as ...`
                # (the wrapped call would not resolve): left to the user.
                if site in recorded:
                    missing.append(site)
                continue
            for found in found_all:
                assert found is not None
                edits.append(Replacement(found[2], wrap.format(expr=found[1], tf=alias)))
        return tuple(edits), missing


def varying_paths(calls: Sequence[Call], kind: str | None = None) -> list[str]:
    """Paths whose leaf differs between calls (optionally only where some call has ``kind`` there)."""
    seen: dict[str, set[object]] = {}
    kinds: dict[str, set[str]] = {}
    order: list[str] = []
    for call in calls:
        for leaf in call.signature:
            if leaf.path not in seen:
                seen[leaf.path] = set()
                kinds[leaf.path] = set()
                order.append(leaf.path)
            seen[leaf.path].add(_key(leaf))
            kinds[leaf.path].add(leaf.kind)
    return [p for p in order if len(seen[p]) > 1 and (kind is None or kind in kinds[p])]


def _key(leaf: Leaf) -> object:
    if leaf.kind == PYTHON:
        return ("py", literal_key(leaf))
    return (leaf.kind, leaf.dtype, leaf.shape, leaf.value, leaf.type_name, leaf.ident, leaf.extra)


def first_config(report: FunctionReport, definition: DefInfo | None) -> Config:
    """How the function is declared today, as far as the recording and the source tell."""
    reduce = report.keras is not None or any(e.traced_as is not None for e in report.events)
    if definition is not None and definition.decorator_text and "reduce_retracing=True" in definition.decorator_text:
        reduce = True
    if definition is not None and definition.wrap_text and "reduce_retracing=True" in definition.wrap_text:
        reduce = True
    return Config(reduce_retracing=reduce)
