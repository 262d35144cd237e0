import tensorflow as tf

model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(2)])
for rows in (2, 5, 7):
    print(model(tf.ones((rows, 3)), training=False).numpy().shape)
