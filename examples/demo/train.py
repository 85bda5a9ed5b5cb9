#!/usr/bin/env python3
"""Train a small neural network on a data set it makes itself, and report its metrics per epoch.

The demo sweep runs this script once per parameter combination. It is deliberately pure Python (no NumPy):
it runs wherever the local Batch AI service runs, with nothing installed.

The model is a one-hidden-layer perceptron (tanh, softmax output) trained with mini-batch gradient descent on
"two moons": two interleaved half circles with noise, a classic data set that a linear model cannot separate.
Each epoch prints one line in Katib's ``name=value`` metrics format, e.g.::

    epoch=3 loss=0.412 accuracy=0.835 val_accuracy=0.820

so ``az batchai sweep metrics --metric val_accuracy`` can read it, and so can a ``--regex``.

Checkpoints (Hyperband, examples/demo/hyperband.yaml): after every epoch the model and the epoch are written to
``checkpoint.json`` in the output directory. A job Hyperband promotes gets its parent's output directory in
``BATCHAI_SWEEP_PARENT_OUTPUT_MODEL`` (as the parent saw it: ``$AZ_BATCHAI_*`` variables are expanded here); it reads
the parent's checkpoint and trains on from the next epoch, up to ``--epochs`` in all.
"""
import argparse
import json
import math
import os
import random
import time


def make_moons(n_points, noise, rng):
    """Two interleaved half circles: label 0 on the upper moon, label 1 on the lower one."""
    data = []
    for i in range(n_points):
        label = i % 2
        angle = rng.uniform(0.0, math.pi)
        if label == 0:
            x, y = math.cos(angle), math.sin(angle)
        else:
            x, y = 1.0 - math.cos(angle), 0.5 - math.sin(angle)
        data.append(((x + rng.gauss(0.0, noise), y + rng.gauss(0.0, noise)), label))
    return data


class Mlp:
    """inputs -> tanh hidden layer -> softmax over 2 classes."""

    def __init__(self, n_inputs, n_hidden, rng):
        scale = 1.0 / math.sqrt(n_inputs)
        self.w1 = [[rng.gauss(0.0, scale) for _ in range(n_inputs)] for _ in range(n_hidden)]
        self.b1 = [0.0] * n_hidden
        self.w2 = [[rng.gauss(0.0, 1.0 / math.sqrt(n_hidden)) for _ in range(n_hidden)] for _ in range(2)]
        self.b2 = [0.0, 0.0]

    def forward(self, x):
        hidden = [math.tanh(sum(w * xi for w, xi in zip(row, x)) + b) for row, b in zip(self.w1, self.b1)]
        logits = [sum(w * h for w, h in zip(row, hidden)) + b for row, b in zip(self.w2, self.b2)]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return hidden, [e / total for e in exps]

    def train_batch(self, batch, learning_rate):
        """One gradient step on a batch; returns the batch's summed cross-entropy loss."""
        g_w1 = [[0.0] * len(self.w1[0]) for _ in self.w1]
        g_b1 = [0.0] * len(self.b1)
        g_w2 = [[0.0] * len(self.w2[0]) for _ in self.w2]
        g_b2 = [0.0, 0.0]
        loss = 0.0
        for x, label in batch:
            hidden, probs = self.forward(x)
            loss -= math.log(max(probs[label], 1e-12))
            d_logits = [p - (1.0 if k == label else 0.0) for k, p in enumerate(probs)]
            for k, d in enumerate(d_logits):
                g_b2[k] += d
                for j, h in enumerate(hidden):
                    g_w2[k][j] += d * h
            for j, h in enumerate(hidden):
                d_hidden = sum(d_logits[k] * self.w2[k][j] for k in range(2)) * (1.0 - h * h)
                g_b1[j] += d_hidden
                for i, xi in enumerate(x):
                    g_w1[j][i] += d_hidden * xi
        step = learning_rate / len(batch)
        for j, row in enumerate(self.w1):
            for i in range(len(row)):
                row[i] -= step * g_w1[j][i]
            self.b1[j] -= step * g_b1[j]
        for k, row in enumerate(self.w2):
            for j in range(len(row)):
                row[j] -= step * g_w2[k][j]
            self.b2[k] -= step * g_b2[k]
        return loss

    def accuracy(self, data):
        hits = sum(1 for x, label in data if max(range(2), key=lambda k: self.forward(x)[1][k]) == label)
        return hits / len(data)


CHECKPOINT = 'checkpoint.json'


def save_checkpoint(directory, model, epoch):
    os.makedirs(directory, exist_ok=True)
    partial = os.path.join(directory, CHECKPOINT + '.partial')
    with open(partial, 'w', encoding='utf-8') as out:
        json.dump({'epoch': epoch, 'w1': model.w1, 'b1': model.b1, 'w2': model.w2, 'b2': model.b2}, out)
    os.replace(partial, os.path.join(directory, CHECKPOINT))  # a job killed mid-write leaves the last one whole


def resume(model):
    """The epoch the parent reached, with its weights loaded into `model`; 0 without a parent."""
    parent = os.environ.get('BATCHAI_SWEEP_PARENT_OUTPUT_MODEL')
    if not parent:
        return 0
    path = os.path.join(os.path.expandvars(parent), CHECKPOINT)
    with open(path, encoding='utf-8') as f:
        saved = json.load(f)
    model.w1, model.b1, model.w2, model.b2 = saved['w1'], saved['b1'], saved['w2'], saved['b2']
    print('resumed from epoch {} of {} ({})'.format(saved['epoch'], os.environ.get('BATCHAI_SWEEP_PARENT'), path),
          flush=True)
    return saved['epoch']


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--learning-rate', type=float, default=0.5)
    parser.add_argument('--hidden-units', type=int, default=8)
    parser.add_argument('--epochs', type=int, default=20)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--points', type=int, default=300)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--epoch-seconds', type=float, default=0.0,
                        help='sleep this long after each epoch (the adaptive demo: time for the controller to look)')
    parser.add_argument('--output-dir', default=os.environ.get('AZ_BATCHAI_OUTPUT_MODEL', ''),
                        help='where to write model.txt (default: $AZ_BATCHAI_OUTPUT_MODEL when set)')
    args = parser.parse_args()

    rng = random.Random(args.seed)
    data = make_moons(args.points, noise=0.15, rng=rng)
    split = int(len(data) * 0.8)
    train, validation = data[:split], data[split:]
    model = Mlp(2, args.hidden_units, rng)
    print('training: learning_rate={} hidden_units={} epochs={} points={}'.format(
        args.learning_rate, args.hidden_units, args.epochs, args.points), flush=True)

    start = resume(model)
    for epoch in range(start + 1, args.epochs + 1):
        rng.seed(args.seed * 1000 + epoch)  # the same shuffles whether the epochs ran in one job or were resumed
        rng.shuffle(train)
        loss = 0.0
        for start in range(0, len(train), args.batch_size):
            loss += model.train_batch(train[start:start + args.batch_size], args.learning_rate)
        print('epoch={} loss={:.4f} accuracy={:.4f} val_accuracy={:.4f}'.format(
            epoch, loss / len(train), model.accuracy(train), model.accuracy(validation)), flush=True)
        if args.output_dir:
            save_checkpoint(args.output_dir, model, epoch)
        time.sleep(args.epoch_seconds)

    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
        with open(os.path.join(args.output_dir, 'model.txt'), 'w', encoding='utf-8') as out:
            out.write(repr({'w1': model.w1, 'b1': model.b1, 'w2': model.w2, 'b2': model.b2}))


if __name__ == '__main__':
    main()
