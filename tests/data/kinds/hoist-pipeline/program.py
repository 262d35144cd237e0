import tensorflow as tf

for _epoch in range(3):
    ds = tf.data.Dataset.range(4).map(lambda v: v + 1)
    print([int(item) for item in ds])
