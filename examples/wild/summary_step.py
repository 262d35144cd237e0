"""Wild case: a Python int epoch used as a tf.summary step, which TensorFlow wants as int64.

Passing it as `tf.constant(epoch, dtype=tf.int32)` would crash the program inside tf.summary;
the dtype must fit every use of the value in the function body.
Run: tfretrace run --fix-plan --save s.json examples/wild/summary_step.py, then tfretrace fix s.json.
"""

import argparse
import tempfile

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="the first epoch")
parser.add_argument("--size", type=int, default=5, help="epochs")
args = parser.parse_args()

writer = tf.summary.create_file_writer(tempfile.mkdtemp(prefix="summary-step-"))


@tf.function
def log_loss(loss, epoch):
    with writer.as_default():
        tf.summary.scalar("loss", loss, step=epoch)
    return loss * 2.0


for epoch in range(args.seed, args.seed + args.size):
    print("epoch", epoch, float(log_loss(tf.constant(1.0 / (epoch + 1)), epoch)))
