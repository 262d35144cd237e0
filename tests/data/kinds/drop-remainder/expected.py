import tensorflow as tf


@tf.function
def total(batch):
    rows = [batch[i] * (i + 1) for i in range(batch.shape[0])]
    return tf.add_n(rows)


dataset = tf.data.Dataset.range(10).batch(4, drop_remainder=True)
for batch in dataset:
    print(int(total(batch)))
