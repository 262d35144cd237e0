import tensorflow as tf

DATA = tf.constant([1.0, 2.0], dtype=tf.float64)


@tf.function
def scale64(lr):
    return DATA * lr


for lr in (0.1, 0.2, 0.3):
    print("p08", [round(v, 6) for v in scale64(lr).numpy().tolist()])
