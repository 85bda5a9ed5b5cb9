"""A stand-in for the recipe's train_mnist.py (chainermn v1.3.0 examples/mnist), which needs Chainer, a GPU and the
MNIST download: the same command line (-g, -o DIR), a table of the same columns on stdout, and files in the output
directory as Chainer's trainer writes them (`log`, `cg.dot`). Only the standard library. As in chainermn's example,
every MPI rank trains and only rank 0 prints and writes the report (mpirun starts one process per node)."""
import argparse
import json
import os
import sys

parser = argparse.ArgumentParser(description='ChainerMN example: MNIST (stand-in)')
parser.add_argument('--gpu', '-g', action='store_true', help='Use GPU')
parser.add_argument('--out', '-o', default='result', help='Directory to output the result')
parser.add_argument('--epoch', '-e', type=int, default=3, help='Number of sweeps over the dataset to train')
args = parser.parse_args()
if int(os.environ.get('OMPI_COMM_WORLD_RANK', '0')) != 0:  # chainermn's comm.rank under Open MPI's mpirun
    sys.exit(0)

print('==========================================')
print('Num unit: 1000')
print('Num Minibatch-size: 100')
print('Num epoch: {}'.format(args.epoch))
print('==========================================')
print('epoch       main/loss   validation/main/loss  main/accuracy  validation/main/accuracy  elapsed_time')
log = []
for epoch in range(1, args.epoch + 1):
    row = {'epoch': epoch, 'main/loss': 0.3 / epoch, 'validation/main/loss': 0.2 / epoch,
           'main/accuracy': 0.9 + epoch / 100, 'validation/main/accuracy': 0.95 + epoch / 100, 'elapsed_time': 1.5}
    log.append(row)
    print('{epoch:<11d} {main/loss:<11.5f} {validation/main/loss:<21.5f} {main/accuracy:<14.4f} '
          '{validation/main/accuracy:<25.4f} {elapsed_time:.4f}'.format(**row))
os.makedirs(args.out, exist_ok=True)
with open(os.path.join(args.out, 'log'), 'w', encoding='utf-8') as f:
    json.dump(log, f)
with open(os.path.join(args.out, 'cg.dot'), 'w', encoding='utf-8') as f:
    f.write('digraph graphname {}\n')
