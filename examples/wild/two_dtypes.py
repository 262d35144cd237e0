"""Wild case: one function deliberately called with float waveforms and with string file names.

No single input_signature accepts both (one dtype per position): a fix must not write one, or
the program fails at its first string call.
Run: tfretrace run --fix-plan --save s.json examples/wild/two_dtypes.py, then tfretrace fix s.json.
"""

import tensorflow as tf


@tf.function
def element_count(x):
    return tf.size(x)


for n in (100, 160, 220):
    print("waveform", int(element_count(tf.zeros([n]))))
for names in (["a.wav"], ["b.wav", "c.wav"]):
    print("files", int(element_count(tf.constant(names))))
