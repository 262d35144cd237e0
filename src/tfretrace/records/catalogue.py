"""The cause catalogue: one stable code and slug per root cause, shared by the runtime and the linter."""

from __future__ import annotations

from collections.abc import Iterator

from tfretrace.records.cause import Cause

__all__ = ["Cause", "entries", "get"]


_RUNTIME: tuple[Cause, ...] = (
    Cause(
        "TFR000",
        "first-trace",
        "first trace of this function",
        "Every tf.function traces once for its first input signature. This is expected.",
        "Nothing to fix.",
        "",
        "",
    ),
    Cause(
        "TFR001",
        "shape-changed",
        "a tensor argument changed shape",
        "Tensor shapes are part of the cache key. A call with a shape not covered by an earlier "
        "trace builds a new graph, unless the earlier trace has None in that dimension.",
        "Give the function an input_signature whose TensorSpecs have None in the dimensions "
        "that vary, or pass reduce_retracing=True; or pad/bucket inputs to a few fixed shapes.",
        "@tf.function\ndef step(x):\n    return tf.reduce_sum(x)\n\nfor n in range(10, 20):\n"
        "    step(tf.ones([8, n]))   # one trace per length",
        "@tf.function(input_signature=[tf.TensorSpec([8, None], tf.float32)])\ndef step(x):\n"
        "    return tf.reduce_sum(x)\n\nfor n in range(10, 20):\n    step(tf.ones([8, n]))   # one trace",
    ),
    Cause(
        "TFR002",
        "dtype-changed",
        "a tensor argument changed dtype",
        "The dtype of a tensor is part of the cache key and is never generalized, not even with "
        "reduce_retracing=True. NumPy arrays default to float64 and int64.",
        "Cast at the call site (tf.cast(x, tf.float32), np.asarray(x, np.float32)) so every call "
        "passes the same dtype.",
        "step(tf.ones([4]))\nstep(np.ones(4))        # float64: a second trace",
        "step(tf.ones([4]))\nstep(tf.cast(np.ones(4), tf.float32))",
    ),
    Cause(
        "TFR003",
        "python-value-changed",
        "a Python value argument changed",
        "Python scalars, strings and None are baked into the graph as constants: each distinct "
        "value traces a new graph (1, 1.0 and True count as equal).",
        "Pass the value as a tensor (tf.constant(v)) so it becomes a graph input, or keep it "
        "fixed for the function's lifetime.",
        "for epoch in range(100):\n    train_step(x, epoch)          # one trace per epoch",
        "for epoch in range(100):\n    train_step(x, tf.constant(epoch))   # one trace",
    ),
    Cause(
        "TFR004",
        "structure-changed",
        "the nesting structure of an argument changed",
        "Lists, tuples, dicts and namedtuples are unpacked into the cache key: a different "
        "length, different keys, a list instead of a tuple, or a tensor instead of a Python "
        "value is a new signature. Structures are never generalized.",
        "Keep the structure fixed: pad lists to a fixed length or stack them into one tensor; "
        "always pass the same keys; pass tensors where a tensor was passed before.",
        "step([a, b])\nstep([a, b, c])     # list of len 2 -> len 3",
        "step(tf.stack([a, b, c]))   # one tensor with a None dimension",
    ),
    Cause(
        "TFR005",
        "object-identity",
        "a new Python object was passed",
        "Objects that are not tensors, Python literals or containers are keyed by a weak "
        "reference: a new instance retraces unless it compares equal (__eq__/__hash__) to an "
        "earlier argument that is still alive.",
        "Reuse one object, pass its numeric fields as tensors, or implement "
        "__tf_tracing_type__ (tf.types.experimental.SupportsTracingProtocol).",
        "for _ in range(10):\n    step(x, Config(scale=2.0))   # new object each call",
        "cfg = Config(scale=2.0)\nfor _ in range(10):\n    step(x, cfg)",
    ),
    Cause(
        "TFR006",
        "new-function-object",
        "a new tf.function object for code that was already traced",
        "Every tf.function object has its own cache. Creating it again (inside a loop, inside "
        "a function called per batch, per new instance of a class, per new Keras model or after "
        "compile()) starts from an empty cache and traces again, even with an identical signature.",
        "Create the tf.function once, outside the loop or in __init__, and reuse it.",
        "for batch in data:\n    f = tf.function(loss_fn)\n    f(batch)",
        "f = tf.function(loss_fn)\nfor batch in data:\n    f(batch)",
    ),
    Cause(
        "TFR007",
        "variable-creation",
        "the extra trace after the first call created variables",
        "A tf.function whose first trace creates tf.Variables is traced a second time, without "
        "variable creation. This happens once per function object and is expected.",
        "Nothing to fix unless the function object itself is re-created: then create it once.",
        "",
        "",
    ),
    Cause(
        "TFR008",
        "context-changed",
        "the tracing context changed",
        "The cache key includes the context of the call: the device (per replica under a "
        "distribution strategy), the enclosing graph, XLA compilation and the variable policy.",
        "Call the function from one context (one device scope, outside or inside the same "
        "strategy scope); per-replica traces under MirroredStrategy are expected once per device.",
        "with tf.device('/cpu:0'):\n    f(x)\nwith tf.device('/cpu:1'):\n    f(x)",
        "with tf.device('/cpu:0'):\n    f(x)\n    f(x)",
    ),
    Cause(
        "TFR009",
        "variable-spec-changed",
        "a tf.Variable argument changed trainable flag or aliasing",
        "tf.Variable arguments are keyed by shape, dtype, trainable and which arguments alias "
        "the same variable. Passing one variable twice, or two different ones, is a new key.",
        "Pass variables in a consistent arrangement, or capture them from the enclosing scope.",
        "step(v, v)\nstep(v, w)",
        "step(v, w)\nstep(v, w)",
    ),
    Cause(
        "TFR010",
        "unexplained",
        "no difference found in the signature",
        "The cache missed but no argument or context difference was found between this trace "
        "and the closest earlier one. The raw cache key is reported; please file it.",
        "Look at the raw key in the report; please report it to tfretrace.",
        "",
        "",
    ),
    Cause(
        "TFR011",
        "keras-new-model",
        "a model rebuilt at the same place traced the same job again",
        "Every Keras model has its own train/test/predict tf.functions, and a model's first "
        "trace of each is expected: an encoder and a decoder, a GAN's models, the architectures "
        "of a tutorial or a grid search are not retraces. A model built again at the same place "
        "with the same layers, doing the same predict/evaluate job an earlier one did without "
        "being trained (a model built per request), traces them again for each model. "
        "TensorFlow's warning counts all models together because they share the same code.",
        "Build the model once and reuse it; for a few small inputs call model(x, training=False) "
        "instead of model.predict(x).",
        "for x in requests:\n    model = make_model()\n    model.predict(x)",
        "model = make_model()\nfor x in requests:\n    model.predict(x)",
    ),
    Cause(
        "TFR012",
        "keras-recompile",
        "compile() was called again",
        "model.compile() resets model.train_function, test_function and predict_function, so "
        "the next fit/evaluate/predict builds and traces new tf.functions.",
        "Call compile() once before the training loop; change the learning rate through the "
        "optimizer (model.optimizer.learning_rate.assign(...)) instead of recompiling.",
        "for epoch in range(10):\n    model.compile(optimizer='adam', loss='mse')\n"
        "    model.fit(x, y, epochs=1)",
        "model.compile(optimizer='adam', loss='mse')\nmodel.fit(x, y, epochs=10)",
    ),
    Cause(
        "TFR013",
        "keras-load-model",
        "a model loaded with load_model traced its functions again",
        "A model loaded from disk is a new model object with new tf.functions: loading per call "
        "or per request traces every time.",
        "Load the model once at start-up and keep it.",
        "def handle(x):\n    model = keras.models.load_model('m.keras')\n    return model.predict(x)",
        "model = keras.models.load_model('m.keras')\ndef handle(x):\n    return model.predict(x)",
    ),
    Cause(
        "TFR014",
        "xla-first-compile",
        "first XLA compile of a jit_compile trace",
        "A function with jit_compile=True (or Keras compile(jit_compile=True), the default "
        "'auto' on GPUs) is compiled by XLA for the concrete shapes of its first call. Expected.",
        "Nothing to fix.",
        "",
        "",
    ),
    Cause(
        "TFR015",
        "xla-recompile",
        "XLA compiled a trace again for new concrete shapes",
        "XLA keeps a second cache below the trace cache, keyed by the concrete shape of every "
        "input. A trace with None dimensions (reduce_retracing, an input_signature, Keras) is "
        "compiled again for every new concrete shape, with no retrace and no TensorFlow warning. "
        "A cluster compiled more than 10 times with fewer than 50 executions per compile is "
        "megamorphic: under auto-clustering TensorFlow then stops compiling it.",
        "Pad or bucket the varying dimensions to a few fixed sizes (tf.data "
        "bucket_by_sequence_length, padded_batch, drop_remainder=True for batches); or turn XLA "
        "off where compiles outnumber calls (jit_compile=False on the tf.function, "
        "model.compile(..., jit_compile=False) in Keras).",
        "@tf.function(jit_compile=True, reduce_retracing=True)\ndef step(x):\n"
        "    return tf.reduce_sum(x)\n\nfor n in range(10, 20):\n"
        "    step(tf.ones([8, n]))   # 2 traces, 10 XLA compiles",
        "@tf.function(jit_compile=True, reduce_retracing=True)\ndef step(x):\n"
        "    return tf.reduce_sum(x)\n\nfor n in range(10, 20):\n"
        "    step(tf.pad(tf.ones([8, n]), [[0, 0], [0, 20 - n]]))   # 1 trace, 1 compile",
    ),
    # Traces of TensorFlow's and Keras' own code made for a user's call: the row is named after
    # that call and sits at the user's line; the fix is at the user's level, never in their code.
    Cause(
        "TFR016",
        "pfor-per-call",
        "tf.vectorized_map (pfor) called eagerly traced a new function",
        "Called eagerly, tf.vectorized_map and tf.pfor wrap the loop in a brand new "
        "tf.function on every call (TensorFlow's warning names pfor.<locals>.f): every call "
        "traces and vectorizes the whole loop body again.",
        "Call tf.vectorized_map from inside a tf.function created once (decorate the function "
        "that calls it): pfor is then traced into that graph, once per input signature.",
        "for x in batches:\n    y = tf.vectorized_map(per_example, x)   # a trace per call",
        "@tf.function\ndef apply(x):\n    return tf.vectorized_map(per_example, x)\n\n"
        "for x in batches:\n    y = apply(x)   # one trace",
    ),
    Cause(
        "TFR017",
        "restored-new-signature",
        "a function restored by tf.saved_model.load was called with a new input signature",
        "A restored function keeps only the concrete functions saved with it; TensorFlow wraps "
        "them in restored_function_body, a tf.function that traces again for every new input "
        "signature it is called with (and fails when no saved concrete function matches).",
        "Call the restored function with the shapes and dtypes it was saved for (pad to a "
        "fixed shape), or save it with an input_signature whose TensorSpecs have None in the "
        "dimensions that vary.",
        "loaded = tf.saved_model.load(path)\nfor n in range(2, 6):\n    loaded.f(tf.ones([n]))   "
        "# a trace per length",
        "# at save time\n@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])\n"
        "def f(self, x): ...\n\nloaded = tf.saved_model.load(path)\nfor n in range(2, 6):\n"
        "    loaded.f(tf.ones([n]))   # one trace",
    ),
    Cause(
        "TFR018",
        "restored-reloaded",
        "a SavedModel loaded again traced its restored function again",
        "Every tf.saved_model.load makes new restored functions with empty caches: loading per "
        "call or per request traces every time, on top of reading the files.",
        "Load the SavedModel once at start-up and keep the object.",
        "def handle(x):\n    loaded = tf.saved_model.load(path)\n    return loaded.f(x)",
        "loaded = tf.saved_model.load(path)\ndef handle(x):\n    return loaded.f(x)",
    ),
    Cause(
        "TFR019",
        "saved-model-export",
        "traced again to be written into a SavedModel (expected)",
        "tf.saved_model.save and Keras' model.export trace every function they write again, "
        "for each of its input signatures, inside the save: serialization needs graphs built "
        "in the save context (and Keras' serving_default endpoint is a new tf.function). "
        "This is part of saving and is expected.",
        "Nothing to fix; saving less often saves these traces.",
        "",
        "",
    ),
    Cause(
        "TFR020",
        "data-pipeline-rebuilt",
        "a tf.data pipeline was built again and traced its map/filter function again",
        "Dataset.map, filter, flat_map and interleave trace their function when the pipeline is "
        "built, not when it runs: building the dataset again (every epoch, every call of a "
        "helper) traces every function in it again.",
        "Build the dataset once, outside the epoch loop, and iterate over it every epoch "
        "(a tf.data.Dataset can be iterated many times); add .cache() where the input is fixed.",
        "for epoch in range(10):\n    ds = tf.data.Dataset.from_tensor_slices(x).map(parse)\n"
        "    for batch in ds: ...",
        "ds = tf.data.Dataset.from_tensor_slices(x).map(parse)\nfor epoch in range(10):\n"
        "    for batch in ds: ...",
    ),
)

_BY_KEY: dict[str, Cause] = {}


def _register(entries: tuple[Cause, ...]) -> None:
    for entry in entries:
        for key in (entry.code, entry.slug):
            if key in _BY_KEY:
                raise RuntimeError(f"duplicate catalogue key {key!r}")
            _BY_KEY[key] = entry


_register(_RUNTIME)

# The linter's entries are plain data kept beside this file, so that `explain` and the README
# table see every code without importing the linter itself.
from tfretrace.records.lint_catalogue import LINT_RULES  # noqa: E402

_register(LINT_RULES)


def get(key: str) -> Cause:
    """Return the entry for a code (``TFR001``) or a slug (``shape-changed``), case-insensitive."""
    entry = _BY_KEY.get(key) or _BY_KEY.get(key.upper()) or _BY_KEY.get(key.lower())
    if entry is None:
        raise KeyError(key)
    return entry


def entries(kind: str | None = None) -> Iterator[Cause]:
    """Iterate over the catalogue in code order, optionally only one kind."""
    seen: set[str] = set()
    for entry in sorted(_BY_KEY.values(), key=lambda e: e.code):
        if entry.code in seen or (kind is not None and entry.kind != kind):
            continue
        seen.add(entry.code)
        yield entry


RUNTIME_SLUGS: frozenset[str] = frozenset(c.slug for c in _RUNTIME)
