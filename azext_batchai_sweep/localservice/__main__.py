"""Foreground form: `python -m azext_batchai_sweep.localservice --data-dir DIR [options]`.

Runs until SIGTERM or SIGINT, then terminates the running jobs (recorded failed: ServiceStopped) and exits.
"""
import argparse
import logging
import signal
import sys
import threading

from .schedulers.gpus import parse_gpus
from .server import LocalService


def _parser():
    parser = argparse.ArgumentParser(prog='python -m azext_batchai_sweep.localservice',
                                     description='Local Batch AI (2018-05-01) compatible service.')
    parser.add_argument('--data-dir', required=True, help='state, storage, job files and secrets live here')
    parser.add_argument('--host', default='127.0.0.1', help='listen address (non-loopback needs --allow-remote)')
    parser.add_argument('--port', type=int, default=0, help='ARM API port (0: a free port)')
    parser.add_argument('--files-port', type=int, default=0, help='files API port (0: a free port)')
    parser.add_argument('--blob-port', type=int, default=0, help='Blob API port (0: a free port)')
    parser.add_argument('--slots', type=int, default=None, help='nodes of the default cluster (default: CPUs)')
    parser.add_argument('--faults', default=None,
                        help='fault injection, e.g. 5xx=0.2,429=0.1,drop=0.02,latency-ms=200,writes-per-s=20,seed=1')
    parser.add_argument('--scheduler', default='processes', choices=['processes', 'slurm', 'azure-batch'],
                        help='run jobs as processes on this machine, submit them to a Slurm cluster, or run them as '
                             'Azure Batch tasks (clusters: Batch pools)')
    parser.add_argument('--gpus', default=None,
                        help="processes scheduler: GPUs to hand out, 'auto' (nvidia-smi -L), a count or a list")
    parser.add_argument('--partition', default=None, help='Slurm partition (default: the default partition)')
    parser.add_argument('--account', default=None, help='Slurm account to charge')
    parser.add_argument('--slurm-conf', default=None, help='slurm.conf of the cluster (default: Slurm\'s own)')
    parser.add_argument('--slurm-poll', type=float, default=None, help='seconds between two squeue polls')
    parser.add_argument('--batch-account', default=None, help='Azure Batch: the Batch account (az\'s login)')
    parser.add_argument('--resource-group', default=None,
                        help='Azure Batch: the resource group of the Batch account (default: found by its name)')
    parser.add_argument('--pool-prefix', default=None, help='Azure Batch: the prefix of the pools and jobs made')
    parser.add_argument('--batch-poll', type=float, default=None, help='Azure Batch: seconds between two polls')
    parser.add_argument('--allow-remote', action='store_true', help='allow a non-loopback --host')
    parser.add_argument('--log-level', default='INFO', choices=['DEBUG', 'INFO', 'WARNING', 'ERROR'])
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format='%(asctime)s %(levelname)s %(name)s: %(message)s')
    if args.slots is not None and args.slots < 1:
        _parser().error('--slots must be at least 1')
    try:
        gpus = parse_gpus(args.gpus) if args.gpus is not None else None
        if args.scheduler != 'processes' and gpus is not None:
            raise ValueError('--gpus is for the processes scheduler: on Slurm, GPUs come from GRES; on Azure Batch, '
                             'from the pool\'s VM size')
        if (args.scheduler == 'azure-batch') != bool(args.batch_account):
            raise ValueError('--batch-account names the Batch account of --scheduler azure-batch (and only of it)')
        service = LocalService(args.data_dir, host=args.host, port=args.port, files_port=args.files_port,
                               blob_port=args.blob_port, slots=args.slots, faults=args.faults, allow_remote=args.allow_remote,
                               scheduler=args.scheduler, gpus=gpus,
                               slurm={'conf': args.slurm_conf, 'partition': args.partition, 'account': args.account,
                                      'poll_seconds': args.slurm_poll},
                               azure_batch={'batch_account': args.batch_account,
                                            'resource_group': args.resource_group, 'pool_prefix': args.pool_prefix,
                                            'poll_seconds': args.batch_poll})
        service.start()
    except (ValueError, RuntimeError, OSError) as ex:
        print('error: {}'.format(ex), file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(1.0):
        pass
    service.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
