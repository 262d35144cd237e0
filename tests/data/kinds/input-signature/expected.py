import tensorflow as tf


@tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.float32)])
def square(x):
    return tf.reduce_sum(x * x)


for n in range(1, 4):
    print(float(square(tf.ones([n]))))
