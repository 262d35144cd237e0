import tensorflow as tf

DATA = tf.constant([1.0, 2.0])


@tf.function
def scaled(rate):
    if not isinstance(rate, float):
        rate = rate / 100  # given as a percentage
    return DATA * rate


for rate in (0.1, 0.2, 0.3):
    print("p13", [round(v, 6) for v in scaled(rate).numpy().tolist()])
