"""TensorFlow's XLA log lines read: each compile's function, argument shapes and time, from fd 2's text."""

from __future__ import annotations

import re
from typing import NamedTuple

_LOG_LINE = re.compile(rb"^([IWEF])\d{4} [\d:.]+\s+(\d+) ([\w.]+):\d+\] (.*)$")


# TensorFlow 2.15 logs through its own C++ logger: a date, the level, the source path, no thread.
_OLD_LOG_LINE = re.compile(rb"^\d{4}-\d\d-\d\d [\d:.]+: ([IWEF]) (?:\S*/)?([\w.]+):\d+\] (.*)$")


_COMPILE_FN = re.compile(r"^XlaCompiler::CompileFunction (\S+?)\[")


_ARG = re.compile(r"^\s*XLA arg (\d+) shape: (\w+)\[([\d,]*)\] name: (\S*) TF arg (\d+)")


_COMPILED = re.compile(r"^Compiled (\S+) (\d+) times, compile time: (\d+) us")


_XLA_DTYPES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "s8": "int8",
    "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8", "u16": "uint16",
    "u32": "uint32", "u64": "uint64", "pred": "bool", "c64": "complex64", "c128": "complex128",
}


# Named tuples, not dataclasses: the relay process (python -I -S, which `tfretrace run` waits for)
# loads this module, and dataclasses would bring inspect, ast and dis and build each class's code.
class XlaArg(NamedTuple):
    """One non-variable argument of a compile: its position among the function's inputs."""

    tf_arg: int
    dtype: str
    shape: tuple[int, ...]


class Compile(NamedTuple):
    """One XLA compile as TensorFlow logged it."""

    cluster: str
    tf_count: int
    seconds: float
    args: tuple[XlaArg, ...]


# TensorFlow's C++ severities in the order TF_CPP_MIN_LOG_LEVEL counts them.
_SEVERITIES = b"IWEF"


# Sources whose INFO message spans lines (the CPU instructions note at import: "To enable ...").
_MULTILINE = frozenset({"cpu_feature_guard"})
# The node an op's error names, on a line after the error's own: "\t [[{{node embed/GatherV2}}]]".
_NODE_LINE = re.compile(rb"^\s+\[\[\{\{node [^}]*\}\}\]\]$")


class _Building:
    """One compile whose argument lines are being read."""

    __slots__ = ("args", "cluster", "collecting", "inputs_seen")

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.args: list[XlaArg] = []
        self.inputs_seen = False
        self.collecting = False


class Parser:
    """Turns TensorFlow log lines into :class:`Compile` records; says which lines were its own.

    Inside one compile, tf2xla compiles while-loop bodies and branches with CompileFunction too;
    the cluster's own argument list is the first ``XLA computation inputs`` block after its
    CompileFunction line, so later blocks (the bodies') are ignored.
    """

    def __init__(self, swallow: frozenset[str], hide_below: int = 0) -> None:
        # Source files whose lines exist only because tfretrace asked for them.
        self._swallow = swallow
        self._building: dict[bytes, list[_Building]] = {}
        # Lines of a severity below the user's TF_CPP_MIN_LOG_LEVEL, which tfretrace lowered:
        # hidden again (a known multi-line message with its further lines in the same read).
        self._hide_below = hide_below
        self._hiding = False
        self._after_hidden = False  # the last prefixed line of this read was hidden

    def new_chunk(self) -> None:
        """A new read from the pipe: a message's further lines arrive in the same write."""
        self._hiding = False
        self._after_hidden = False

    def feed(self, line: bytes) -> tuple[bool, Compile | None]:
        """(line is tfretrace's own, the compile it completes if any)."""
        text = line.rstrip(b"\r\n")
        match = _LOG_LINE.match(text)
        if match is not None:
            severity, thread, source, body_bytes = match.groups()
        else:
            old = _OLD_LOG_LINE.match(text)
            if old is None:
                # A hidden message's further line, or the user's. TensorFlow appends the failing
                # node to an op's error as a line of its own ("\t [[{{node x/GatherV2}}]]"),
                # which no user line looks like.
                node = self._after_hidden and _NODE_LINE.match(text) is not None
                return self._hiding or node, None
            # No thread id in this format: compiles on several threads at once could interleave
            # their argument lines, which only makes the per-argument diff of those compiles vaguer.
            thread = b""
            severity, source, body_bytes = old.groups()
        module = source.decode("ascii", "replace").rsplit(".", 1)[0]
        body = body_bytes.decode("utf-8", "replace")
        hidden = _SEVERITIES.index(severity) < self._hide_below
        # A message's further lines have no prefix; in a pipe they cannot be told from the user's
        # next line, so only TensorFlow's known multi-line INFO message takes them along.
        self._hiding = hidden and module in _MULTILINE
        self._after_hidden = hidden
        ours = hidden or module in self._swallow or (
            module == "dump_graph" and "xla_compile_" in body and "xla_compiler" in self._swallow
        )
        if module == "xla_compiler":
            self._on_compiler(thread, body)
        elif module == "device_compilation_profiler":
            return ours, self._on_compiled(thread, body)
        return ours, None

    def _on_compiler(self, thread: bytes, body: str) -> None:
        stack = self._building.setdefault(thread, [])
        started = _COMPILE_FN.match(body)
        if started is not None:
            stack.append(_Building(started.group(1)))
            del stack[:-16]  # a compile that failed never logs "Compiled": do not grow forever
            return
        if not stack:
            return
        if body.startswith("XLA computation inputs"):
            first = next((b for b in stack if not b.inputs_seen), None)
            for building in stack:
                building.collecting = building is first
            if first is not None:
                first.inputs_seen = True
            return
        arg = _ARG.match(body)
        if arg is None:
            if not body.lstrip().startswith("XLA arg"):
                for building in stack:
                    building.collecting = False
            return
        for building in stack:
            if building.collecting and not arg.group(4):  # named args are variables
                dims = tuple(int(d) for d in arg.group(3).split(",") if d)
                dtype = _XLA_DTYPES.get(arg.group(2), arg.group(2))
                building.args.append(XlaArg(int(arg.group(5)), dtype, dims))

    def _on_compiled(self, thread: bytes, body: str) -> Compile | None:
        done = _COMPILED.match(body)
        if done is None:
            return None
        cluster = done.group(1)
        stack = self._building.get(thread, [])
        args: tuple[XlaArg, ...] = ()
        for at in range(len(stack) - 1, -1, -1):
            if stack[at].cluster == cluster:
                args = tuple(stack[at].args)
                del stack[at:]
                break
        return Compile(cluster, int(done.group(2)), int(done.group(3)) / 1e6, args)


_PREFIX_DONE = re.compile(rb"^(?:[IWEF]\d{4} [\d:.]+\s+\d+ [\w.]+|\d{4}-\d\d-\d\d [\d:.]+: [IWEF] \S+):\d+\]")


_PREFIX_PART = re.compile(
    rb"^(?:[IWEF]\d{0,4}(?: [\d:.]*(?:\s+\d*(?: [\w.]*(?::\d*)?)?)?)?"
    rb"|\d{1,4}(?:-\d{0,2}(?:-\d{0,2}(?: [\d:.]*(?: (?:[IWEF](?: [\w/.]*(?::\d*)?)?)?)?)?)?)?)$"
)


def may_hold(partial: bytes, marker: bytes) -> bool:
    """A partial line that could still become a TensorFlow log line or the sync marker."""
    if len(partial) <= len(marker) and marker.startswith(partial):
        return True
    return bool(_PREFIX_DONE.match(partial) or _PREFIX_PART.match(partial))
