"""A stand-in for the recipes' ConvMNIST.py (CNTK on MNIST): same command line, same progress.log format, no CNTK.

The "error" it reports falls with the epochs and is smallest for a feedforward constant near 0.3 and a wide hidden
layer, so that a search has a best configuration to find and more epochs always help. It reads the MNIST text file
the recipe uploaded to Blob from --datadir (the job's mounted container), and fails without it. It writes
`<logdir>/progress.log` with lines like ConvMNIST's ("... metric = 12.34%"), which the recipes' MetricExtractor
(regex 'metric =(.*?)\\%') reads.
"""
import argparse
import math
import os

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=1)
parser.add_argument('--feedforward_const', type=float, required=True)
parser.add_argument('--hidden_layers_dim', type=int, required=True)
parser.add_argument('--datadir', required=True)
parser.add_argument('--outputdir')
parser.add_argument('--logdir', required=True)
args = parser.parse_args()

# The recipe's MNIST upload must be what the job mounts (its Blob container, at --datadir): no data, no training.
with open(os.path.join(args.datadir, 'Train-28x28_cntk_text.txt'), encoding='utf-8') as data:
    samples = sum(1 for _ in data)
os.makedirs(args.logdir, exist_ok=True)
base = abs(math.log10(args.feedforward_const) - math.log10(0.3)) + 100.0 / args.hidden_layers_dim
with open(os.path.join(args.logdir, 'progress.log'), 'w', encoding='utf-8') as log:
    for epoch in range(1, args.epochs + 1):
        error = 10.0 * base / (1.0 + epoch)
        log.write('Finished Epoch[{} of {}]: [Training] loss = {:.4f} * 60000, metric = {:.4f}% * 60000\n'.format(
            epoch, args.epochs, error / 20.0, error))
print('epochs={} feedforward_const={} hidden_layers_dim={} datadir={} samples={}'.format(
    args.epochs, args.feedforward_const, args.hidden_layers_dim, args.datadir, samples))
