"""The Slurm scheduler (`--scheduler slurm`): every Batch AI job becomes one Slurm batch job.

commands.py runs Slurm's client commands; mapping.py turns a Batch AI job into sbatch options and a batch script and
Slurm's final states into Batch AI outcomes; scheduler.py submits, polls, terminates and re-attaches.
"""
