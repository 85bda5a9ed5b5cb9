"""A stand-in for the TensorFlow-GPU-Distributed recipe's mnist_replica.py (between-graph replicated TensorFlow on
MNIST, parameter server and workers): same command line, same progress lines, no TensorFlow.

It prints "job name = <ps|worker>", "task index = <i>" and, for a worker, mnist_replica's training lines ("<time>:
Worker <i>: training step <n> done (global step: <g>)", "Training elapsed time: <s> s", "After <n> training step(s),
validation cross entropy = <x>"); a parameter server returns at once (the real one serves until it is killed).
"""
import argparse
import time

parser = argparse.ArgumentParser()
for flag in ('--data_dir', '--checkpoint_dir', '--log_dir', '--ps_hosts', '--worker_hosts', '--job_name'):
    parser.add_argument(flag)
parser.add_argument('--task_index', type=int, required=True)
parser.add_argument('--num_gpus', type=int, default=1)
parser.add_argument('--train_steps', type=int, default=200)
args = parser.parse_args()

print('job name = %s' % args.job_name)
print('task index = %d' % args.task_index)
if args.job_name == 'worker':
    begin = time.time()
    for step in range(0, args.train_steps + 1, max(1, args.train_steps // 4)):
        print('%f: Worker %d: training step %d done (global step: %d)' % (time.time(), args.task_index, step, step))
    print('Training elapsed time: %f s' % (time.time() - begin))
    print('After %d training step(s), validation cross entropy = %g' % (args.train_steps, 1000.0 / args.train_steps))
