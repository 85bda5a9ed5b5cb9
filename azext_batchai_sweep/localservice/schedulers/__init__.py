"""What runs the jobs: the schedulers, one family behind one interface (scheduler.py).

- processes/ (`--scheduler processes`, the default): jobs are process groups on this machine;
- slurm/ (`--scheduler slurm`): jobs are Slurm batch jobs;
- azurebatch/ (`--scheduler azure-batch`): jobs are Azure Batch tasks, clusters are Batch pools.

What they share sits beside them: scheduler.py (the interface the ARM layer calls, the held-jobs loop, and how a
job's state, outcome and end reason are written into its body), launcher.py (a job's processes over its nodes, per
toolkit: it runs in the service, in Slurm's batch script and on Batch nodes, so it imports nothing of its package),
jobenv.py (the environment every job gets) and gpus.py (the machine's GPUs and a cluster's GPUs per node).
"""
