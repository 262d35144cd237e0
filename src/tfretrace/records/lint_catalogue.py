"""Catalogue entries of the static linter's rules (data only; the checks live in tfretrace.lint)."""

from __future__ import annotations

from tfretrace.records.cause import Cause

# The first sentence of `why` and of `fix` is what a finding's one-line message quotes, so each
# first sentence stands on its own; the rest is for `tfretrace explain`.
LINT_RULES: tuple[Cause, ...] = (
    Cause(
        "TFR100",
        "unknown-noqa-code",
        "unknown tfretrace code or slug in a noqa comment",
        "A noqa comment names a TFR code or a rule slug that tfretrace does not have, so it "
        "suppresses nothing; a misspelt slug would otherwise hide the mistake. Codes of other "
        "tools (E501, F401) are left to them.",
        "Use a code or slug from `tfretrace explain --list`, e.g. `# noqa: TFR108` or "
        "`# noqa: print-in-tf-function`.",
        "print(x)  # noqa: print-in-tf-fucntion",
        "print(x)  # noqa: print-in-tf-function",
        kind="lint",
        cause="suppression-that-suppresses-nothing",
    ),
    Cause(
        "TFR101",
        "tf-function-in-loop",
        "tf.function created inside a loop",
        "Each iteration makes a new tf.function object with an empty cache, so it traces again. "
        "Every tf.function object has its own trace cache, and TensorFlow's 'triggered "
        "tf.function retracing' warning fires after five such objects for the same code.",
        "Create the tf.function once, before the loop, and call it inside. Wrapping a different "
        "Python function per iteration (the loop variable) is not flagged.",
        "for batch in data:\n    step = tf.function(loss_fn)\n    step(batch)",
        "step = tf.function(loss_fn)\nfor batch in data:\n    step(batch)",
        kind="lint",
        cause="new-function-object",
    ),
    Cause(
        "TFR102",
        "tf-function-per-call",
        "tf.function created and called inside a function that runs per batch or per request",
        "The enclosing function makes a new tf.function object every time it runs, so every "
        "call traces again. It is flagged when the enclosing function is called inside a loop "
        "in the same file, is a web route handler, or is a Keras on_*batch* callback method.",
        "Create the tf.function once (module level, __init__, or a cached factory) and call "
        "that object.",
        "def predict_one(x):\n    f = tf.function(model_fn)\n    return f(x)\n\n"
        "for x in inputs:\n    predict_one(x)",
        "f = tf.function(model_fn)\n\ndef predict_one(x):\n    return f(x)\n\n"
        "for x in inputs:\n    predict_one(x)",
        kind="lint",
        cause="new-function-object",
    ),
    Cause(
        "TFR103",
        "keras-model-in-loop",
        "Keras model built inside a loop or a request handler",
        "Every new model has its own train, test and predict tf.functions, which trace again on "
        "first use. TensorFlow may also warn about retracing because all models share the same "
        "code. If you need fresh weights per iteration (k-fold, grid search) this is the price of "
        "a new model and you can suppress the finding.",
        "Build the model once outside the loop and reuse it; to restart training, reset the "
        "weights (model.set_weights(initial_weights)) instead of building a new model.",
        "for x in requests:\n    model = keras.Sequential([keras.layers.Dense(1)])\n"
        "    model.predict(x)",
        "model = keras.Sequential([keras.layers.Dense(1)])\nfor x in requests:\n"
        "    model.predict(x)",
        kind="lint",
        cause="keras-new-model",
    ),
    Cause(
        "TFR104",
        "keras-compile-in-loop",
        "model.compile() called inside a loop",
        "compile() drops the model's train, test and predict functions, so the next fit, "
        "evaluate or predict builds and traces new ones. Recompiling every epoch to change the "
        "learning rate traces the training step every epoch.",
        "Compile once before the loop; change the learning rate with "
        "model.optimizer.learning_rate.assign(value) or a LearningRateScheduler callback.",
        "for epoch in range(10):\n    model.compile(optimizer='adam', loss='mse')\n"
        "    model.fit(x, y, epochs=1)",
        "model.compile(optimizer='adam', loss='mse')\nmodel.fit(x, y, epochs=10)",
        kind="lint",
        cause="keras-recompile",
    ),
    Cause(
        "TFR105",
        "keras-load-model-per-call",
        "model loaded inside a loop, a request handler or a function called in a loop",
        "A loaded model is a new object with new tf.functions, so each load traces again, on top "
        "of the cost of reading the file.",
        "Load the model once at start-up (module level or __init__) and keep the object.",
        "@app.post('/predict')\ndef predict(x):\n    model = keras.models.load_model('m.keras')\n"
        "    return model(x)",
        "model = keras.models.load_model('m.keras')\n\n@app.post('/predict')\ndef predict(x):\n"
        "    return model(x)",
        kind="lint",
        cause="keras-load-model",
    ),
    Cause(
        "TFR106",
        "python-counter-argument",
        "loop counter passed to a tf.function",
        "A Python int argument is baked into the graph as a constant, so each new counter value "
        "traces a new graph. A loop over 100 epochs traces the function 100 times. The same holds "
        "for a Python number the loop steps each iteration (lr = lr * 0.9, lr *= 0.9).",
        "Pass tf.constant(counter) (or a tf.Variable) so the value becomes a graph input, or "
        "stop passing the counter.",
        "@tf.function\ndef train_step(x, step):\n    ...\n\nfor step in range(1000):\n"
        "    train_step(x, step)",
        "@tf.function\ndef train_step(x, step):\n    ...\n\nfor step in range(1000):\n"
        "    train_step(x, tf.constant(step))",
        kind="lint",
        cause="python-value-changed",
    ),
    Cause(
        "TFR107",
        "keras-predict-in-loop",
        "model.predict() called inside a loop",
        "predict() is built for large inputs: each call builds a data pipeline and iterator, "
        "which costs milliseconds even when nothing retraces. A batch size different from the "
        "first call traces predict_function once more (it is then relaxed to a None batch "
        "dimension).",
        "For a few samples call the model, model(x, training=False).numpy() (no predict function "
        "is traced; predict_on_batch still traces one per new batch size); for many, "
        "collect them and call predict() once on the whole batch.",
        "for x in samples:\n    y = model.predict(x[None])",
        "ys = model.predict(np.stack(samples))\n# or, per sample:\ny = model(x[None], training=False)",
        kind="lint",
        cause="shape-changed",
    ),
    Cause(
        "TFR108",
        "print-in-tf-function",
        "print() inside a tf.function",
        "print() runs once per trace, not per call: later calls run the graph and print "
        "nothing. It does not cause retracing; it only shows when a trace happens, which is "
        "useful to debug retracing but misleading as per-step logging.",
        "Use tf.print(...) to print on every call; keep print() only to log traces (then add "
        "'# noqa: TFR108').",
        "@tf.function\ndef step(x):\n    print('loss', x)\n    return x",
        "@tf.function\ndef step(x):\n    tf.print('loss', x)\n    return x",
        kind="lint",
        cause="trace-time-side-effect",
    ),
    Cause(
        "TFR109",
        "python-random-in-tf-function",
        "Python or NumPy random number drawn inside a tf.function",
        "random.* and np.random.* run once at trace time and the number is frozen into the "
        "graph as a constant: every call reuses the same value. It does not cause retracing.",
        "Use tf.random.uniform / tf.random.normal, or a tf.random.Generator created outside the "
        "function, so each call draws a new value.",
        "@tf.function\ndef augment(x):\n    if random.random() < 0.5:\n"
        "        x = tf.image.flip_left_right(x)\n    return x",
        "@tf.function\ndef augment(x):\n    if tf.random.uniform([]) < 0.5:\n"
        "        x = tf.image.flip_left_right(x)\n    return x",
        kind="lint",
        cause="frozen-random-value",
    ),
    Cause(
        "TFR110",
        "wall-clock-in-tf-function",
        "time.time() or datetime.now() inside a tf.function",
        "The clock is read once at trace time and frozen into the graph as a constant: every "
        "call sees the same timestamp. It does not cause retracing.",
        "Use tf.timestamp() inside the graph, or measure time outside the tf.function call.",
        "@tf.function\ndef step(x):\n    t0 = time.time()\n    y = model(x)\n"
        "    return y, time.time() - t0",
        "@tf.function\ndef step(x):\n    t0 = tf.timestamp()\n    y = model(x)\n"
        "    return y, tf.timestamp() - t0",
        kind="lint",
        cause="frozen-wall-clock",
    ),
    Cause(
        "TFR111",
        "outer-list-mutation-in-tf-function",
        "list defined outside a tf.function is appended to inside it",
        "The append runs once per trace, not per call, and stores a symbolic tensor that is "
        "useless outside the graph. It does not cause retracing; the list just stops growing "
        "after the first call.",
        "Return the value from the tf.function and append it outside, or accumulate into a "
        "tf.TensorArray or a tf.Variable.",
        "losses = []\n\n@tf.function\ndef step(x):\n    loss = compute(x)\n"
        "    losses.append(loss)\n    return loss",
        "losses = []\n\n@tf.function\ndef step(x):\n    return compute(x)\n\n"
        "losses.append(step(x).numpy())",
        kind="lint",
        cause="trace-time-mutation",
    ),
    Cause(
        "TFR112",
        "global-in-tf-function",
        "global or nonlocal state used inside a tf.function",
        "Python state is read and written only at trace time: assignments to the global run "
        "once, and later changes to it are not seen by the graph, which keeps the traced value. "
        "Changing the global does not trigger a retrace.",
        "Keep changing state in a tf.Variable (created outside, updated with .assign) or pass "
        "the value as a tensor argument.",
        "counter = 0\n\n@tf.function\ndef step(x):\n    global counter\n    counter += 1\n"
        "    return x * counter",
        "counter = tf.Variable(0)\n\n@tf.function\ndef step(x):\n    counter.assign_add(1)\n"
        "    return x * tf.cast(counter, x.dtype)",
        kind="lint",
        cause="frozen-python-state",
    ),
    Cause(
        "TFR113",
        "variable-in-tf-function",
        "tf.Variable created unconditionally inside a tf.function",
        "A first call that creates variables is traced twice, and the second trace must not "
        "create new ones: the call fails with 'tf.function only supports singleton tf.Variables "
        "created on the first call'.",
        "Create the variable outside the function (or in __init__/build), or guard it with "
        "'if self.v is None:' so that only the first trace creates it.",
        "@tf.function\ndef step(x):\n    v = tf.Variable(1.0)\n    return v * x",
        "v = tf.Variable(1.0)\n\n@tf.function\ndef step(x):\n    return v * x",
        kind="lint",
        cause="variable-per-trace",
    ),
    Cause(
        "TFR114",
        "numpy-in-tf-function",
        ".numpy() called inside a tf.function",
        "Inside a trace, tensors are symbolic and .numpy() raises AttributeError; on a captured "
        "eager tensor it reads the value once at trace time and freezes it into the graph.",
        "Stay in TensorFlow ops inside the function, and call .numpy() on its result outside.",
        "@tf.function\ndef step(x):\n    return np.mean(x.numpy())",
        "@tf.function\ndef step(x):\n    return tf.reduce_mean(x)\n\nstep(x).numpy()",
        kind="lint",
        cause="eager-value-at-trace",
    ),
    Cause(
        "TFR115",
        "deprecated-relax-shapes",
        "experimental_relax_shapes passed to tf.function",
        "experimental_relax_shapes is a deprecated alias of reduce_retracing. It still works in "
        "TensorFlow 2.21 but is slated for removal.",
        "Rename the argument to reduce_retracing=True.",
        "@tf.function(experimental_relax_shapes=True)\ndef step(x):\n    return x",
        "@tf.function(reduce_retracing=True)\ndef step(x):\n    return x",
        kind="lint",
        cause="shape-changed",
    ),
    Cause(
        "TFR116",
        "python-scalar-argument",
        "data-dependent Python number passed to a tf.function",
        "len(x), x.shape[i], int(...), float(...), .item() and .numpy() give Python numbers, "
        "which are baked into the graph as constants: each distinct value traces a new graph.",
        "Pass a tensor (tf.shape(x)[0] inside the function, or tf.constant(value)) instead of a "
        "Python number.",
        "for x in batches:\n    step(x, len(x))      # one trace per batch size",
        "for x in batches:\n    step(x, tf.shape(x)[0])",
        kind="lint",
        cause="python-value-changed",
    ),
)
