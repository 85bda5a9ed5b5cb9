"""A stand-in for TensorFlow's MNIST tutorial convolutional.py (the TensorFlow-GPU recipe's training script): same
command line (none), same progress lines, no TensorFlow.

It prints the tutorial's report for a few steps ("Step <n> (epoch <e>), <ms> ms", "Minibatch loss: ..., learning
rate: ...", "Minibatch error: <pct>%", "Validation error: <pct>%") and its last line, "Test error: <pct>%".
"""
import sys

STEPS, EVAL_FREQUENCY = 300, 100
for step in range(0, STEPS + 1, EVAL_FREQUENCY):
    error = 90.0 / (1.0 + step / 10.0)
    print('Step {} (epoch {:.2f}), {:.1f} ms'.format(step, step * 64 / 55000.0, 5.0))
    print('Minibatch loss: {:.3f}, learning rate: {:.6f}'.format(error / 10.0, 0.01))
    print('Minibatch error: {:.1f}%'.format(error))
    print('Validation error: {:.1f}%'.format(error * 1.1))
    sys.stdout.flush()
print('Test error: {:.1f}%'.format(90.0 / (1.0 + STEPS / 10.0)))
