import numpy as np
import tensorflow as tf

def predict_full_batches(model, x, batch_size=None, **kwargs):
    """model.predict(x, ...) in full batches: the same predictions, one batch shape.

    Written by tfretrace fix (keras-pad-rows). predict traces again for every new batch shape (a
    partial last batch, a few rows before many). The full batches of NumPy inputs (a float32 tensor
    as the NumPy array it holds) go to predict as they are (views, not copies); the last partial
    batch is padded, its last row repeated, to a full one, and its outputs are cut back to the rows
    given: the model computes each row from that row alone, so the kept rows are the ones predict
    computed. Other inputs go to predict as they were.
    """
    import numpy as np
    import tensorflow as tf

    if tf.executing_eagerly():  # a float32 tensor is predicted as the NumPy array it holds: the same values
        x = tf.nest.map_structure(lambda a: a.numpy() if isinstance(a, tf.Tensor) and a.dtype == "float32" else a, x)
    size = batch_size or 32  # predict's own default for arrays
    rows = {len(a) if type(a) is np.ndarray and a.ndim else 0 for a in tf.nest.flatten(x)}
    extra = -min(rows) % size
    if len(rows) != 1 or 0 in rows or extra == 0:
        return model.predict(x, batch_size=batch_size, **kwargs)
    (count,) = rows
    full = count - count % size  # the rows of the full batches

    def pad(a):
        return np.concatenate([a[full:], np.repeat(a[-1:], extra, axis=0)])

    head = None
    if full:
        head = model.predict(tf.nest.map_structure(lambda a: a[:full], x), batch_size=batch_size, **kwargs)
    last = model.predict(tf.nest.map_structure(pad, x), batch_size=batch_size, **kwargs)
    if head is None:
        return tf.nest.map_structure(lambda y: y[:count], last)
    return tf.nest.map_structure(lambda h, y: np.concatenate([h, y[:count - full]]), head, last)


model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(2)])
for rows in (40, 70, 100):
    print(predict_full_batches(model, np.ones((rows, 3), dtype=np.float32), verbose=0).shape)
