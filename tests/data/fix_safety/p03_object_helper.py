import tensorflow as tf


class Config:
    def __init__(self, lr):
        self.lr = lr


def anneal(cfg, epoch):
    cfg.lr = cfg.lr / (1 + epoch)


@tf.function
def train(x, cfg):
    return x * cfg.lr


for epoch in range(3):
    cfg = Config(0.5)
    anneal(cfg, epoch)
    print("p03", round(float(train(tf.constant(2.0), cfg)), 4))
