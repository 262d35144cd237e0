"""Wild case: one function deliberately called with float waveforms and with string file names.

No single input_signature accepts both (one dtype per position): a fix must not write one, or
the program fails at its first string call.
Run: tfretrace run --fix-plan --save s.json examples/wild/two_dtypes.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every waveform's length")
parser.add_argument("--size", type=int, default=100, help="samples of the first waveform")
args = parser.parse_args()


@tf.function
def element_count(x):
    return tf.size(x)


for n in (args.size, args.size * 8 // 5, args.size * 11 // 5):
    print("waveform", int(element_count(tf.zeros([n + args.seed]))))
for names in (["a.wav"], ["b.wav", "c.wav"]):
    print("files", int(element_count(tf.constant(names))))
