import tensorflow as tf

SETTINGS = {"k": 1.0}


def times_k(v):
    return v * SETTINGS["k"]


for k in (1.0, 2.0, 3.0):
    SETTINGS["k"] = k
    times_k_tf = tf.function(times_k)
    print("p01b", float(times_k_tf(tf.constant(2.0))))
