"""Train a small text-regression model with a custom loop, then score a few sentences."""

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)  # the same initial weights every run

VOCAB, EMBED, BATCH, EPOCHS = 200, 16, 8, 3
rng = np.random.default_rng(42)


def make_dataset(n=96):
    lengths = rng.integers(4, 12, size=n)
    sentences = [rng.integers(1, VOCAB, size=length) for length in lengths]
    targets = np.array([s.mean() / VOCAB for s in sentences], dtype="float32")
    return sentences, targets


def length_batches(sentences, targets):
    order = np.argsort([len(s) for s in sentences])
    for start in range(0, len(order), BATCH):
        idx = order[start : start + BATCH]
        width = max(len(sentences[i]) for i in idx)
        tokens = np.zeros((len(idx), width), dtype="int32")
        for row, i in enumerate(idx):
            tokens[row, : len(sentences[i])] = sentences[i]
        yield tokens, targets[idx][:, None]


model = tf.keras.Sequential(
    [
        tf.keras.layers.Embedding(VOCAB, EMBED, mask_zero=True),
        tf.keras.layers.GlobalAveragePooling1D(),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(1),
    ]
)
model.build((None, None))
weights = model.trainable_variables
momentum = [tf.Variable(tf.zeros_like(v)) for v in weights]


@tf.function
def train_step(tokens, y, lr):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(tokens, training=True) - y))
    for var, grad, m in zip(weights, tape.gradient(loss, weights), momentum):
        if isinstance(grad, tf.IndexedSlices):
            grad = tf.convert_to_tensor(grad)
        m.assign(0.9 * m + grad)
        var.assign_sub(lr * m)
    return loss


def evaluate(sentences, targets):
    @tf.function
    def batch_error(tokens, y):
        return tf.reduce_sum(tf.abs(model(tokens) - y))

    total = 0.0
    for tokens, y in length_batches(sentences, targets):
        total += float(batch_error(tokens, y))
    return total / len(targets)


@tf.function
def score(token_ids):
    return model(tf.constant([token_ids]))[0, 0]


@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None, None], tf.int32)])
def predict_batch(tokens):
    return model(tokens)[:, 0]


def main(size=96):
    train, train_y = make_dataset(size)
    valid, valid_y = make_dataset(size // 3)
    lr = 0.05
    for epoch in range(EPOCHS):
        losses = [float(train_step(t, y, lr)) for t, y in length_batches(train, train_y)]
        print(f"epoch {epoch + 1}: loss {np.mean(losses):.4f}  val mae {evaluate(valid, valid_y):.4f}  lr {lr:.4f}")
        lr *= 0.7
    # Never retraced (its input_signature is open), but XLA compiles it per batch shape.
    predictions = [predict_batch(tokens) for tokens, _ in length_batches(valid, valid_y)]
    print(f"mean validation prediction {float(tf.reduce_mean(tf.concat(predictions, 0))):.4f}")
    for sentence in ([5, 17, 42], [8, 8, 19, 150], [3, 77]):
        print(sentence, "->", round(float(score(sentence)), 4))


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="the sentences drawn (the weights stay seeded by 0)")
    parser.add_argument("--size", type=int, default=96, help="training sentences (a third as many for validation)")
    args = parser.parse_args()
    rng = np.random.default_rng(42 + args.seed)  # make_dataset's draws
    main(args.size)
