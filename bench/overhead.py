"""Benchmark: cost of tfretrace on cached calls (monitored vs bare) and on each retrace.

Prints, from one run:
  1. the per-call time of a cached tf.function call with and without the monitor, and their ratio
     (target <= 1.01), measured in interleaved blocks so drift affects both sides alike; the same
     for a jit_compile=True function while tfretrace reads TensorFlow's XLA compile log;
  2. the explanation's share of TensorFlow's own trace time per retrace (target <= 5%), for
     functions with 2 and with 50 argument leaves, with 64 earlier traces to compare against.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

# tfretrace before TensorFlow: the first monitor asks TensorFlow to log XLA compiles.
import tfretrace
from tfretrace.runtime import dispatch as dispatch_module

# The first monitor imports TensorFlow after setting TF_CPP_VMODULE, as `tfretrace run` does; a
# TF_CPP_MIN_LOG_LEVEL above 0 would silence the compile log, so it is left alone here.
tfretrace.watch(warn=False, log=False).__enter__().stop()

import tensorflow as tf  # noqa: E402

tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)


def cached_call_ratio(blocks: int, calls: int, jit: bool = False) -> tuple[float, float, float]:
    """Median µs/call bare and monitored over interleaved blocks, and the median paired ratio."""

    @tf.function(jit_compile=jit)
    def f(x: tf.Tensor) -> tf.Tensor:
        return x + 1.0

    x = tf.constant(1.0)
    with tfretrace.watch(warn=False, log=False) as first:
        f(x)  # the trace and its XLA compile, seen by a monitor
    if jit:
        assert first.session().functions[0].xla_compiles == 1, "XLA compile log not read"
    bare: list[float] = []
    monitored: list[float] = []
    ratios: list[float] = []
    for block in range(blocks):
        order = (False, True) if block % 2 == 0 else (True, False)
        times = {}
        for on in order:
            mon = tfretrace.watch(warn=False, log=False).__enter__() if on else None
            f(x)  # not timed: the first call under a new monitor registers the counter
            start = time.perf_counter()
            for _ in range(calls):
                f(x)
            times[on] = (time.perf_counter() - start) / calls * 1e6
            if mon is not None:
                mon.stop()
        bare.append(times[False])
        monitored.append(times[True])
        ratios.append(times[True] / times[False])
    return statistics.median(bare), statistics.median(monitored), statistics.median(ratios)


def hook_nanoseconds(repeat: int = 15, number: int = 200_000) -> float:
    """The call hook's own cost in ns per call, on a callee that does nothing (min of repeats)."""
    import timeit

    from tfretrace._tf import counters

    class Plain:
        def __call__(self, x: object) -> object:
            return x

    class Hooked:
        pass

    Hooked.__call__ = counters.make_call_hook(Plain.__call__)  # type: ignore[method-assign]
    plain, hooked = Plain(), Hooked()
    hooked(1)
    bare = min(timeit.repeat(lambda: plain(1), number=number, repeat=repeat))
    with_hook = min(timeit.repeat(lambda: hooked(1), number=number, repeat=repeat))
    return (with_hook - bare) / number * 1e9


def explanation_share(leaves: int, retraces: int) -> tuple[float, float, float, float]:
    """Median ms of TF's trace and of tfretrace's work per retrace, and the median share."""
    names = [f"a{i}" for i in range(leaves)]
    source = "def body({}):\n    return {}\n".format(", ".join(names), " + ".join(f"tf.reduce_sum({n})" for n in names))
    scope: dict[str, object] = {"tf": tf}
    exec(source, scope)  # a function of exactly `leaves` tensor arguments
    fn = tf.function(scope["body"])  # noqa: TFR102 (one new function per argument count, on purpose)

    ours: list[float] = []
    registry = dispatch_module.dispatch
    on_trace, after_trace = registry._on_trace, registry._after_trace
    pending_time: dict[int, float] = {}

    def timed_on_trace(read):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        token = on_trace(read)
        pending_time[id(token)] = time.perf_counter() - start
        return token

    def timed_after_trace(token, seconds, ok, *rest):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        after_trace(token, seconds, ok, *rest)
        ours.append(pending_time.pop(id(token)) + time.perf_counter() - start)

    registry._on_trace, registry._after_trace = timed_on_trace, timed_after_trace
    try:
        with tfretrace.watch(warn=True, log=True) as mon, warnings.catch_warnings():
            warnings.simplefilter("ignore", tfretrace.RetracingWarning)
            # hooks read the registry methods when installed: re-install them with the timers
            registry._hooks.uninstall()
            registry._hooks._on_trace, registry._hooks._after_trace = timed_on_trace, timed_after_trace
            registry._hooks.install()
            calls: list[float] = []
            for n in range(1, retraces + 1):
                args = [tf.zeros([n]) for _ in range(leaves)]
                start = time.perf_counter()
                fn(*args)
                calls.append(time.perf_counter() - start)
            session = mon.session()
    finally:
        registry._on_trace, registry._after_trace = on_trace, after_trace
        registry._hooks._on_trace, registry._hooks._after_trace = on_trace, after_trace
    report = session.functions[0]
    tf_times = [e.seconds for e in report.events]
    skip = min(30, len(ours) // 2)  # steady state: the compare window is full
    shares = [o / t for o, t in zip(ours[skip:], tf_times[skip:])]
    # The whole retracing call as the user pays it, without our part: lookup, binding, tracing.
    call_shares = [o / (c - o) for o, c in zip(ours[skip:], calls[skip:])]
    assert report.traces == fn.experimental_get_tracing_count()
    return (
        statistics.median(tf_times[skip:]) * 1e3,
        statistics.median(ours[skip:]) * 1e3,
        statistics.median(shares),
        statistics.median(call_shares),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--retraces", type=int, default=100)
    args = parser.parse_args()
    bare, monitored, ratio = cached_call_ratio(args.blocks, args.calls)
    print(f"cached call: bare {bare:.2f} us, monitored {monitored:.2f} us, ratio {ratio:.4f} (target <= 1.01)")
    xla_bare, xla_monitored, xla_ratio = cached_call_ratio(args.blocks, args.calls, jit=True)
    print(
        f"cached call, jit_compile=True (XLA compile log read): bare {xla_bare:.2f} us, "
        f"monitored {xla_monitored:.2f} us, ratio {xla_ratio:.4f} (target <= 1.01)"
    )
    hook_ns = hook_nanoseconds()
    print(f"call hook alone: +{hook_ns:.0f} ns per call = ratio {1 + hook_ns / 1000 / bare:.5f} of the bare call above")
    for leaves in (2, 50):
        tf_ms, ours_ms, share, call_share = explanation_share(leaves, args.retraces)
        print(
            f"retrace, {leaves:2d} leaves: TF graph building {tf_ms:.2f} ms, tfretrace {ours_ms:.3f} ms = "
            f"{share * 100:.2f}% of graph building, {call_share * 100:.2f}% of the whole retracing call "
            "(target <= 5%)"
        )


if __name__ == "__main__":
    main()
