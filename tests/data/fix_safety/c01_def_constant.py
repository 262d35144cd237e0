import tensorflow as tf

SCALE = 3.0


def run_pass(x):
    @tf.function
    def tripled(v):
        return v * SCALE

    return tripled(x)


for i in range(3):
    print("c01", float(run_pass(tf.constant(float(i)))))
