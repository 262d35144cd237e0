import tensorflow as tf

CFG = {"scale": 1.0}


def run_pass(x):
    @tf.function
    def scaled(v):
        return v * CFG["scale"]

    return scaled(x)


for s in (1.0, 2.0, 3.0):
    CFG["scale"] = s
    print("p01", float(run_pass(tf.constant(2.0))))
