import tensorflow as tf


@tf.function
def masked_mean(features):
    values = features["values"]
    if "mask" in features:
        values = values * features["mask"]
    return tf.reduce_mean(values)


values = tf.ones([2, 3])
print(float(masked_mean({"values": values})))
print(float(masked_mean({"values": values, "mask": tf.ones([2, 3])})))
