import tensorflow as tf


@tf.function
def accumulate(x, state=None):
    if state is None:
        state = tf.ones_like(x)
    return state * x


state = None
for _i in range(3):
    state = accumulate(tf.constant([2.0, 3.0]), state)
    print("p06", state.numpy().tolist())
