import tensorflow as tf

ds = tf.data.Dataset.range(4).map(lambda v: v + 1)


for _epoch in range(3):
    print([int(item) for item in ds])
