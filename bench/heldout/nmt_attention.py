"""Held-out: seq2seq translation with Bahdanau attention, the tensorflow/examples training script.

Source: tensorflow/examples, tensorflow_examples/models/nmt_with_attention/{train,nmt,utils}.py at
commits 31fe6a1ae4716a27762115ee2c4577e3545f7d25 (train.py) and
68dbc761166abb227d1950746e6776dfcf0f3202 (nmt.py, utils.py). License: Apache-2.0.
Reduced: --size synthetic sentence pairs (a word-for-word "translation" of random sentences of
2 to 5 words) instead of the spa-eng download, a small word tokenizer and post-padding in numpy
instead of the Keras 2 `Tokenizer`/`pad_sequences` (gone in Keras 3), an index split instead of
scikit-learn's, 16-unit GRUs, batch 16, 2 epochs, no absl flags or checkpoint, Keras 3's
`reduction=None` and `reset_state`. Kept: `Train.training_loop` wrapping its own bound
`train_step`/`test_step` with `tf.function` and assigning them to the instance, the Python loop over
the target length inside both steps, and batches padded to the longest sentence with `drop_remainder`.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=120, help="sentence pairs")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)


class Encoder(tf.keras.Model):
    def __init__(self, vocab_size, embedding_dim, enc_units, batch_sz=64):
        super().__init__()
        self.batch_sz = batch_sz
        self.enc_units = enc_units
        self.embedding = tf.keras.layers.Embedding(vocab_size, embedding_dim)
        self.gru = tf.keras.layers.GRU(self.enc_units, return_sequences=True, return_state=True,
                                       recurrent_initializer="glorot_uniform")

    def call(self, x, hidden):
        x = self.embedding(x)
        output, state = self.gru(x, initial_state=hidden)
        return output, state

    def initialize_hidden_state(self):
        return tf.zeros((self.batch_sz, self.enc_units))


class BahdanauAttention(tf.keras.Model):
    def __init__(self, units):
        super().__init__()
        self.w1 = tf.keras.layers.Dense(units)
        self.w2 = tf.keras.layers.Dense(units)
        self.v = tf.keras.layers.Dense(1)

    def call(self, query, values):
        hidden_with_time_axis = tf.expand_dims(query, 1)
        score = self.v(tf.nn.tanh(self.w1(values) + self.w2(hidden_with_time_axis)))
        attention_weights = tf.nn.softmax(score, axis=1)
        context_vector = tf.reduce_sum(attention_weights * values, axis=1)
        return context_vector, attention_weights


class Decoder(tf.keras.Model):
    def __init__(self, vocab_size, embedding_dim, dec_units):
        super().__init__()
        self.dec_units = dec_units
        self.embedding = tf.keras.layers.Embedding(vocab_size, embedding_dim)
        self.gru = tf.keras.layers.GRU(self.dec_units, return_sequences=True, return_state=True,
                                       recurrent_initializer="glorot_uniform")
        self.fc = tf.keras.layers.Dense(vocab_size)
        self.attention = BahdanauAttention(self.dec_units)

    def call(self, x, hidden, enc_output):
        context_vector, attention_weights = self.attention(hidden, enc_output)
        x = self.embedding(x)
        x = tf.concat([tf.expand_dims(context_vector, 1), x], axis=-1)
        output, state = self.gru(x)
        output = tf.reshape(output, (-1, output.shape[2]))
        x = self.fc(output)
        return x, state, attention_weights


class Train:
    def __init__(self, epochs, enable_function, encoder, decoder, inp_lang, targ_lang, batch_size,
                 per_replica_batch_size):
        self.epochs = epochs
        self.enable_function = enable_function
        self.encoder = encoder
        self.decoder = decoder
        self.inp_lang = inp_lang
        self.targ_lang = targ_lang
        self.batch_size = batch_size
        self.per_replica_batch_size = per_replica_batch_size
        self.optimizer = tf.keras.optimizers.Adam()
        self.loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
        self.train_loss_metric = tf.keras.metrics.Mean(name="train_loss")
        self.test_loss_metric = tf.keras.metrics.Mean(name="test_loss")

    def loss_function(self, real, pred):
        mask = tf.math.logical_not(tf.math.equal(real, 0))
        loss_ = self.loss_object(real, pred)
        mask = tf.cast(mask, dtype=loss_.dtype)
        loss_ *= mask
        return tf.reduce_sum(loss_) * 1.0 / self.batch_size

    def train_step(self, inputs):
        loss = 0
        enc_hidden = self.encoder.initialize_hidden_state()
        inp, targ = inputs
        with tf.GradientTape() as tape:
            enc_output, enc_hidden = self.encoder(inp, enc_hidden)
            dec_hidden = enc_hidden
            dec_input = tf.expand_dims([self.targ_lang["<start>"]] * self.per_replica_batch_size, 1)
            for t in range(1, targ.shape[1]):
                predictions, dec_hidden, _ = self.decoder(dec_input, dec_hidden, enc_output)
                loss += self.loss_function(targ[:, t], predictions)
                dec_input = tf.expand_dims(targ[:, t], 1)
        batch_loss = loss / int(targ.shape[1])
        variables = self.encoder.trainable_variables + self.decoder.trainable_variables
        gradients = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(gradients, variables))
        self.train_loss_metric(batch_loss)

    def test_step(self, inputs_test):
        loss = 0
        enc_hidden = self.encoder.initialize_hidden_state()
        inp_test, targ_test = inputs_test
        enc_output, enc_hidden = self.encoder(inp_test, enc_hidden)
        dec_hidden = enc_hidden
        dec_input = tf.expand_dims([self.targ_lang["<start>"]] * self.per_replica_batch_size, 1)
        for t in range(1, targ_test.shape[1]):
            predictions, dec_hidden, _ = self.decoder(dec_input, dec_hidden, enc_output)
            loss += self.loss_function(targ_test[:, t], predictions)
            prediction_id = tf.argmax(predictions, axis=1)
            dec_input = tf.expand_dims(prediction_id, 1)
        batch_loss = loss / int(targ_test.shape[1])
        self.test_loss_metric(batch_loss)

    def training_loop(self, train_ds, test_ds):
        if self.enable_function:
            self.train_step = tf.function(self.train_step)
            self.test_step = tf.function(self.test_step)
        template = "Epoch: {}, Train Loss: {:.4f}, Test Loss: {:.4f}"
        for epoch in range(self.epochs):
            self.train_loss_metric.reset_state()
            self.test_loss_metric.reset_state()
            for inp, targ in train_ds:
                self.train_step((inp, targ))
            for inp_test, targ_test in test_ds:
                self.test_step((inp_test, targ_test))
            print(template.format(epoch, float(self.train_loss_metric.result()),
                                  float(self.test_loss_metric.result())))
        return float(self.train_loss_metric.result()), float(self.test_loss_metric.result())


def tokenize(lang):
    """Word ids from 1 by first appearance, sentences padded with 0 at the end to the longest."""
    word_index = {}
    for sentence in lang:
        for w in sentence.split():
            word_index.setdefault(w, len(word_index) + 1)
    seqs = [[word_index[w] for w in s.split()] for s in lang]
    tensor = np.zeros((len(seqs), max(len(s) for s in seqs)), dtype=np.int32)
    for i, s in enumerate(seqs):
        tensor[i, : len(s)] = s
    return tensor, word_index


def create_dataset(num_examples, buffer_size, batch_size):
    rng = np.random.default_rng(args.seed)
    words = ["go", "run", "stop", "i", "you", "we", "see", "eat", "the", "cat", "dog", "now", "here"]
    translation = dict(zip(words, ["ve", "corre", "para", "yo", "tu", "nosotros", "mira", "come", "el",
                                   "gato", "perro", "ahora", "aqui"]))
    targ, inp = [], []
    for _ in range(num_examples):
        sentence = list(rng.choice(words, rng.integers(2, 6)))
        targ.append("<start> " + " ".join(sentence) + " <end>")
        inp.append("<start> " + " ".join(translation[w] for w in sentence) + " <end>")
    input_tensor, inp_lang = tokenize(inp)
    target_tensor, targ_lang = tokenize(targ)
    split = num_examples * 8 // 10
    train_dataset = tf.data.Dataset.from_tensor_slices((input_tensor[:split], target_tensor[:split])).shuffle(
        buffer_size)
    train_dataset = train_dataset.batch(batch_size, drop_remainder=True)
    test_dataset = tf.data.Dataset.from_tensor_slices((input_tensor[split:], target_tensor[split:]))
    test_dataset = test_dataset.batch(batch_size, drop_remainder=True)
    return train_dataset, test_dataset, inp_lang, targ_lang


def main(epochs, enable_function, buffer_size, batch_size, num_examples, embedding_dim=16, enc_units=16,
         dec_units=16):
    train_ds, test_ds, inp_lang, targ_lang = create_dataset(num_examples, buffer_size, batch_size)
    encoder = Encoder(len(inp_lang) + 1, embedding_dim, enc_units, batch_size)
    decoder = Decoder(len(targ_lang) + 1, embedding_dim, dec_units)
    train_obj = Train(epochs, enable_function, encoder, decoder, inp_lang, targ_lang, batch_size, batch_size)
    print("Training ...")
    return train_obj.training_loop(train_ds, test_ds)


print("final", [round(v, 4) for v in main(2, True, 1000, 16, args.size)])
