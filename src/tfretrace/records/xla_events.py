"""XLA compile records (no TensorFlow): one event per compile, explained against the trace's earlier compiles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfretrace._util import checked as C
from tfretrace.records.events import Change, Leaf

# The first compile of a trace is expected; every further one is a recompile to explain.
FIRST_COMPILE = "xla-first-compile"
RECOMPILE = "xla-recompile"

# TensorFlow's DeviceCompilationProfiler calls a cluster megamorphic when it was compiled more
# than 10 times with fewer than 50 executions per compile; under auto-clustering it then stops
# compiling it (with jit_compile=True it keeps compiling).
MEGAMORPHIC_COMPILES = 10
MEGAMORPHIC_EXECUTIONS_PER_COMPILE = 50


@dataclass(frozen=True)
class XlaEvent:
    """One XLA compile of one trace: the concrete shapes it was compiled for, and why again."""

    index: int
    trace: int
    cause: str
    seconds: float
    signature: tuple[Leaf, ...]
    changes: tuple[Change, ...] = ()
    closest: int | None = None
    cluster: str = ""
    # TensorFlow's own count of compiles of this cluster, from its log line.
    tf_count: int = 0
    time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON form (schema 1), in the shape of a trace event."""
        return {
            "index": self.index,
            "trace": self.trace,
            "cause": self.cause,
            "seconds": round(self.seconds, 6),
            "signature": [leaf.to_dict() for leaf in self.signature],
            "changes": [c.to_dict() for c in self.changes],
            "closest": self.closest,
            "cluster": self.cluster,
            "tf_count": self.tf_count,
            "time": round(self.time, 6),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "xla_event") -> XlaEvent:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        data = C.mapping(data, where)
        return cls(
            index=C.count(data.get("index"), f"{where}.index", low=1),
            trace=C.count(data.get("trace"), f"{where}.trace", low=1),
            cause=C.text(data.get("cause"), f"{where}.cause"),
            seconds=C.seconds(data.get("seconds"), f"{where}.seconds"),
            signature=C.each(data.get("signature", []), f"{where}.signature", Leaf.from_dict),
            changes=C.each(data.get("changes", []), f"{where}.changes", Change.from_dict),
            closest=C.optional_count(data.get("closest"), f"{where}.closest"),
            cluster=C.text(data.get("cluster", ""), f"{where}.cluster"),
            tf_count=C.count(data.get("tf_count", 0), f"{where}.tf_count"),
            time=C.seconds(data.get("time", 0.0), f"{where}.time", low=-C.MAX_SECONDS),
        )

    def line(self) -> str:
        """``XLA compile #3 of trace #2, xla-recompile, 91.0 ms: x: shape (4,) -> (5,), dim 0``."""
        head = f"XLA compile #{self.index} of trace #{self.trace}, {self.cause}, {self.seconds * 1e3:.1f} ms"
        if not self.changes:
            return head
        return head + ": " + "; ".join(c.line() for c in self.changes)


def megamorphic(compiles_by_cluster: dict[str, int], calls: int) -> list[str]:
    """Clusters TensorFlow would call megamorphic: > 10 compiles, < 50 executions per compile.

    Executions are approximated by the function's calls (every call of a jit_compile function
    runs its cluster once).
    """
    flagged = []
    for cluster, compiles in sorted(compiles_by_cluster.items()):
        if compiles > MEGAMORPHIC_COMPILES and calls < MEGAMORPHIC_EXECUTIONS_PER_COMPILE * compiles:
            flagged.append(cluster)
    return flagged
