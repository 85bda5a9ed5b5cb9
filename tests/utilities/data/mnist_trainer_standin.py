"""A stand-in for the PyTorch-GPU-Distributed-Gloo recipe's mnist_trainer.py (distributed PyTorch on MNIST): same
command line, same progress lines, no PyTorch.

Each of the --world-size workers (rank --rank) checks what Batch AI gives a pyTorchSettings job (--dist-url
$AZ_BATCHAI_PYTORCH_INIT_METHOD, --rank $AZ_BATCHAI_TASK_INDEX) and prints the trainer's progress line
("Epoch: [<e>][<i>/<n>]\tTime ...\tLoss ...\tPrec@1 ...\tPrec@5 ...") for each of --epochs epochs.
"""
import argparse
import sys

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=10)
parser.add_argument('--world-size', default=1, type=int)
parser.add_argument('--dist-url', default='tcp://224.66.41.62:23456', type=str)
parser.add_argument('--dist-backend', default='gloo', type=str)
parser.add_argument('--rank', default=-1, type=int)
args = parser.parse_args()

if not args.dist_url.startswith(('tcp://', 'env://', 'file://')) or not 0 <= args.rank < args.world_size:
    sys.exit('bad distributed settings: --dist-url {} --rank {} --world-size {}'.format(
        args.dist_url, args.rank, args.world_size))
print('rank {} of {} ({}, {})'.format(args.rank, args.world_size, args.dist_backend, args.dist_url.split(':')[0]))
for epoch in range(args.epochs):
    loss = 2.3 / (1 + epoch)
    print('Epoch: [{0}][{1}/{2}]\tTime {3:.3f} ({3:.3f})\tData {4:.3f} ({4:.3f})\tLoss {5:.4f} ({5:.4f})\t'
          'Prec@1 {6:.3f} ({6:.3f})\tPrec@5 {7:.3f} ({7:.3f})'.format(
              epoch, 469, 469, 0.01, 0.001, loss, 100 - 10 * loss, 100 - loss))
