"""Held-out: snowball graph convolutional network, a tf.function step made anew for every run (GitHub).

Source: PwnerHarry/Stronger_GCN, TF2/train.py, TF2/utils.py (`trainer`, `split_dataset`),
TF2/models.py (`GCN`, `snowball`) and TF2/layers.py (`LAYER_SNOWBALL`) at commit
e05c391777739a90a8ada73393f1d517889c60c1. License: MIT.
Reduced: a synthetic graph of --size nodes (6 classes, 40 features, edges mostly within a class,
the adjacency row-normalized with self-loops as a SparseTensor) instead of the Citeseer files; the
public split scaled to the graph (the first tenth train, the next 30% validation, the last 30%
test); 64 hidden units instead of 2100, 3 runs of 40 epochs instead of 10 of up to 5000; the
repository's decoupled-weight-decay RMSprop (a Keras 2 optimizer subclass) is Keras 3's
`RMSprop(weight_decay=...)`; no mixed-precision graph rewrite, wall-clock times, result file or
summary logs; `tf.random.set_seed` added so that dropout repeats. Kept: `trainer()` defining the
`@tf.function` `optimize_one_step` and returning it, called once per run, the step called with
the model, optimizer, loss object and tensors, `LAYER_SNOWBALL` as a `tf.Module` whose
`@tf.function` `__call__` takes a Python bool `eye`, the model called eagerly after each step
with `train=False`, the metrics, early stopping and per-epoch line.
"""

import argparse
import math

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=400, help="nodes of the graph")
cli = parser.parse_args()
np.random.seed(cli.seed)
tf.random.set_seed(cli.seed)

# the repository's defaults, reduced where the docstring says
args = argparse.Namespace(lr=0.0017077, weight_decay=0.033218, dropout=0.95232, hidden=64, layers=2,
                          epochs=40, early_stopping=50, runtimes=3, validation=1, debug=1)
DTYPE = tf.float32


class LAYER_GENERAL(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)

    def vars_trainable(self):
        return [self.weight, self.bias]


class LAYER_SNOWBALL(LAYER_GENERAL):
    def __init__(self, features_in, features_out, name=None, dtype=tf.float32):
        super().__init__(name=name)
        self.features_in, self.features_out = features_in, features_out
        self.dtype = dtype
        stdv_weight, stdv_bias = 1. / math.sqrt(self.features_out), 1. / math.sqrt(self.features_out)
        self.weight = tf.Variable(tf.random.uniform([self.features_in, self.features_out], minval=-stdv_weight,
                                                    maxval=stdv_weight, dtype=self.dtype), name='w')
        self.bias = tf.Variable(tf.random.uniform([self.features_out], minval=-stdv_bias, maxval=stdv_bias,
                                                  dtype=self.dtype), name='b')

    def reset_parameters(self):
        stdv_weight, stdv_bias = 1. / math.sqrt(self.features_out), 1. / math.sqrt(self.features_out)
        self.weight.assign(tf.random.uniform([self.features_in, self.features_out], minval=-stdv_weight,
                                             maxval=stdv_weight, dtype=self.dtype))
        self.bias.assign(tf.random.uniform([self.features_out], minval=-stdv_bias, maxval=stdv_bias,
                                           dtype=self.dtype))

    @tf.function
    def __call__(self, input, adj, eye=False):
        XW = tf.matmul(input, self.weight)
        if eye:
            return XW + self.bias
        elif type(adj) == tf.SparseTensor:  # noqa: E721
            return tf.sparse.sparse_dense_matmul(adj, XW) + self.bias
        else:
            return tf.matmul(adj, XW) + self.bias


class GCN(tf.keras.Model):
    def __init__(self, nfeat, nlayers, nhid, nclass, dropout, name=None, dtype=tf.float32):
        super().__init__(name=name)
        self.nfeat, self.nlayers, self.nhid, self.nclass = nfeat, nlayers, nhid, nclass
        self.dropout = dropout
        self.hidden = []

    def reset_parameters(self):
        for layer in self.hidden:
            layer.reset_parameters()
        self.out.reset_parameters()

    def vars_trainable(self):
        list_vars_trainable = []
        for layer in self.hidden:
            list_vars_trainable.extend(layer.vars_trainable())
        list_vars_trainable.extend(self.out.vars_trainable())
        return list_vars_trainable


class snowball(GCN):
    def __init__(self, nfeat, nlayers, nhid, nclass, dropout, activation, name=None, dtype=tf.float32):
        super().__init__(nfeat, nlayers, nhid, nclass, dropout, name=name)
        self.activation = activation
        for k in range(nlayers):
            layer = LAYER_SNOWBALL(k * nhid + nfeat, nhid, dtype=dtype)
            self.hidden.append(layer)
        self.out = LAYER_SNOWBALL(nlayers * nhid + nfeat, nclass, dtype=dtype)

    def __call__(self, x, adj, train=True):
        dropout = tf.nn.dropout if train else tf.identity
        list_output_blocks = []
        for layer, layer_num in zip(self.hidden, np.arange(self.nlayers)):
            if layer_num == 0:
                list_output_blocks.append(dropout(self.activation(layer(x, adj)), self.dropout))
            else:
                list_output_blocks.append(dropout(self.activation(
                    layer(tf.concat([x, *list_output_blocks[0:layer_num]], 1), adj)), self.dropout))
        output = self.out(tf.concat([x, *list_output_blocks], 1), adj, eye=False)
        return tf.nn.softmax(output, axis=1)


def load_dataset(n, dtype):
    """A graph of n nodes in 6 classes with class-dependent features, adjacency normalized with self-loops."""
    labels = np.random.randint(0, 6, n)
    features = (np.random.rand(n, 40) < 0.05 + 0.1 * (np.arange(40)[None, :] % 6 == labels[:, None]))
    features = features.astype(np.float32)
    same = labels[:, None] == labels[None, :]
    edges = np.random.rand(n, n) < np.where(same, 8.0 / n, 1.0 / n)
    edges = np.triu(edges, 1)
    a = edges + edges.T + np.eye(n, dtype=bool)
    a = a / a.sum(1, keepdims=True)
    rows, cols = np.nonzero(a)
    adj = tf.SparseTensor(np.stack([rows, cols], 1).astype(np.int64), a[rows, cols].astype(np.float32), a.shape)
    return adj, tf.constant(features, dtype=dtype), tf.constant(labels, dtype=tf.int32)


def split_dataset(num_nodes, labels):
    idx_train = np.arange(num_nodes // 10).reshape(-1, 1)
    idx_val = np.arange(num_nodes // 10, num_nodes // 10 + num_nodes * 3 // 10).reshape(-1, 1)
    idx_test = np.arange(num_nodes - num_nodes * 3 // 10, num_nodes).reshape(-1, 1)
    idx_train, idx_val, idx_test = (tf.convert_to_tensor(idx_train.astype(int), dtype=tf.int32),
                                    tf.convert_to_tensor(idx_val.astype(int), dtype=tf.int32),
                                    tf.convert_to_tensor(idx_test.astype(int), dtype=tf.int32))
    labels_train, labels_val, labels_test = tf.gather(labels, idx_train), tf.gather(labels, idx_val), tf.gather(
        labels, idx_test)
    return idx_train, idx_val, idx_test, labels_train, labels_val, labels_test


def trainer():
    @tf.function
    def optimize_one_step(model, optimizer, features, adj, labels, idx_train, tracker_loss):
        with tf.GradientTape() as t:
            vars_trainable = model.vars_trainable()
            t.watch(vars_trainable)
            output = model(features, adj)
            labels_train, output_train = tf.gather(labels, idx_train), tf.gather(output, idx_train)
            loss_train = tracker_loss(labels_train, output_train)
            grads = t.gradient(loss_train, vars_trainable)
        optimizer.apply_gradients(zip(grads, vars_trainable))
        return loss_train
    return optimize_one_step


activation = tf.identity  # linear_snowball
adj, features, labels = load_dataset(cli.size, DTYPE)
model = snowball(nfeat=features.shape[1], nlayers=args.layers, nhid=args.hidden,
                 nclass=int(tf.reduce_max(labels)) + 1, dropout=args.dropout, activation=activation, dtype=DTYPE)

tracker_loss_train = tf.keras.losses.SparseCategoricalCrossentropy(name='loss_train')
tracker_loss_val = tf.keras.losses.SparseCategoricalCrossentropy(name='loss_val')
tracker_loss_test = tf.keras.losses.SparseCategoricalCrossentropy(name='loss_test')
tracker_acc_train = tf.keras.metrics.SparseCategoricalAccuracy(name='acc_train')
tracker_acc_val = tf.keras.metrics.SparseCategoricalAccuracy(name='acc_val')
tracker_acc_test = tf.keras.metrics.SparseCategoricalAccuracy(name='acc_test')

acc_runs = []
for runtime in range(args.runtimes):
    optimizer = tf.keras.optimizers.RMSprop(learning_rate=args.lr, weight_decay=args.weight_decay, rho=0.99,
                                            epsilon=1e-8)
    idx_train, idx_val, idx_test, labels_train, labels_val, labels_test = split_dataset(adj.shape[0], labels)
    epoch, early_stopping, acc_best_train, acc_test_best_train, acc_test_best_val, best_train, best_val, best_test = (
        0, 0, 0, 0, 0, float('Inf'), float('Inf'), float('Inf'))
    train = trainer()
    for epoch in range(args.epochs):
        loss_train = train(model, optimizer, features, adj, labels, idx_train, tracker_loss_train)
        output = model(features, adj, train=False)
        output_test = tf.gather(output, idx_test)
        output_train = tf.gather(output, idx_train)
        tracker_acc_train(labels_train, output_train)
        tracker_acc_test(labels_test, output_test)
        acc_best_train = max(acc_best_train, tracker_acc_train.result())
        if loss_train < best_train:
            best_train, acc_test_best_train = loss_train, tracker_acc_test.result()
            if tracker_acc_train.result() == 1:
                early_stopping = 0
        if args.validation or args.debug:
            labels_val, output_val = tf.gather(labels, idx_val), tf.gather(output, idx_val)
            acc_val, loss_val = tracker_acc_val(labels_val, output_val), tracker_loss_val(labels_val, output_val)
            if loss_val < best_val:
                best_val, acc_test_best_val, early_stopping = loss_val, tracker_acc_test.result(), 0
        if tracker_acc_train.result() < acc_best_train and loss_train > best_train:
            if args.validation:
                if loss_val > best_val:
                    early_stopping += 1
                else:
                    early_stopping = 0
            else:
                early_stopping += 1
        else:
            early_stopping = 0
        if early_stopping >= args.early_stopping:
            break
        if args.debug:
            loss_test = tracker_loss_test(labels_test, output_test)
            best_test = min(best_test, loss_test)
            acc_run = acc_test_best_val if args.validation == 1 else acc_test_best_train
            print('R%02d E%04d l_train: %4.2e a_train: %5.1f%% a_val %5.1f%% a_test %5.1f%% ba_train %4.2e '
                  'ba_val %4.2e ba_test %4.2e a_run %5.1f%% stop %d' % (
                      runtime, epoch + 1, loss_train, 100 * tracker_acc_train.result(), 100 * acc_val,
                      100 * tracker_acc_test.result(), best_train, best_val, best_test, 100 * acc_run,
                      args.early_stopping - early_stopping))
        epoch += 1
        tracker_acc_train.reset_state()
        tracker_acc_val.reset_state()
        tracker_acc_test.reset_state()
    acc_run = acc_test_best_val if args.validation == 1 else acc_test_best_train
    acc_runs.append(float(acc_run))
    print("R%d finished with %d epochs, acc_run: %5.1f%%" % (runtime, epoch + 1, 100 * float(acc_run)))
    model.reset_parameters()
print("mean result: ", round(float(np.mean(acc_runs)), 4), "all results: ", [round(a, 4) for a in acc_runs])
