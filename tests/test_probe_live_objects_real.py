"""The probe passes a trace's object arguments again only where that cannot reach outside TensorFlow's state.

A train step given its model, optimizer and loss is traced again with those live objects once the program
has ended, and both versions are run on the same inputs: every variable they touch (weights, the
optimizer's iterations and learning rate) must be as the program left it. An open file given as an
argument, or a method bound to the program's logger, is not passed again (tracing would write into it): the file holds
what python's run wrote.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

from prog_runs import ran_program, saved_session

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

PROGRAM = """\
import keras
import tensorflow as tf

log = open("trace_log.txt", "w")
x0 = tf.reshape(tf.range(6, dtype=tf.float32), (2, 3)) / 6.0
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="ones")])
opt = keras.optimizers.SGD(0.05)


def mse(pred, target):
    return tf.reduce_mean(tf.square(pred - target))


@tf.function
def logged(x, out, epoch):
    out.write("tracing logged\\n")
    return x * (1.0 + epoch)


class Logger:
    def __init__(self, out):
        self.out = out

    def say(self, text):
        self.out.write(text)


say = Logger(log).say


@tf.function
def said(x, say, epoch):
    say("tracing said\\n")
    return x * (2.0 + epoch)


@tf.function
def decayed(net, loss_fn, optimizer, x, epoch):
    with tf.GradientTape() as tape:
        loss = loss_fn(net(x), x[:, :2])
    grads = tape.gradient(loss, net.trainable_variables)
    optimizer.apply_gradients(zip(grads, net.trainable_variables))
    optimizer.learning_rate.assign(0.05 * (1 - epoch / 4))
    return loss


for epoch in range(3):
    print("logged", epoch, float(tf.reduce_sum(logged(x0, log, epoch))))
    print("said", epoch, float(tf.reduce_sum(said(x0, say, epoch))))
    print("decayed", epoch, f"{float(decayed(model, mse, opt, x0, epoch)):.6f}")
log.flush()
"""


def test_an_open_file_argument_is_not_passed_again_and_its_function_is_not_made_safe(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM)
    ran_program(folder)
    written = (folder / "trace_log.txt").read_text()
    functions = {f["name"]: f for f in saved_session(folder)["functions"]}
    # The recorded run wrote what python's run wrote: the probe did not trace `logged` with the file again,
    # nor `said` with a method bound to the program's own logger object.
    assert (folder / "trace_log.txt").read_text() == written
    assert (written.count("tracing logged"), written.count("tracing said")) == (3, 3)
    for name in ("logged", "said"):
        assert not [s for s in functions[name]["plan"] if s.get("safety") == "safe"], name
    # The model, optimizer and loss are TensorFlow objects and a function: asked, and safe.
    steps = [s for s in functions["decayed"]["plan"] if s.get("edits")]
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [("tensor-argument", "safe", "tensorflow")]


def _state(model: Any, opt: Any) -> list[bytes]:
    return [v.numpy().tobytes() for v in (*model.weights, *opt.variables)]


def test_the_probe_leaves_every_variable_of_the_live_objects_as_the_program_left_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfretrace._tf.probe import probe_argument

    (tmp_path / "prog.py").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["prog.py"])
    ran = runpy.run_path(str(tmp_path / "prog.py"), run_name="__main__")
    model, opt = ran["model"], ran["opt"]
    before = _state(model, opt)
    dtype, said, depends, compared = probe_argument(ran["decayed"], "epoch", ("int32", "int64", "float32"))
    # Asked and run both ways (the learning rate assigned, the weights updated, each run restored).
    assert said is None and depends is None and dtype is not None and compared > 0
    assert _state(model, opt) == before
    ran["log"].close()
