import tensorflow as tf


def doubled(v):
    return v * 2.0


for i in range(3):
    doubled_tf = tf.function(doubled)
    print("p11", float(doubled_tf(tf.constant(float(i)))))
    del doubled_tf
