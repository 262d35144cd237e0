import tensorflow as tf


@tf.function
def reparameterize(mean):
    eps = tf.ones(shape=mean.shape)
    return mean + eps


for n in (2, 3, 4):
    print("p05", float(tf.reduce_sum(reparameterize(tf.zeros([n, 4])))))
