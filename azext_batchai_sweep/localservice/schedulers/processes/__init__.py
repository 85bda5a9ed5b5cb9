"""The processes scheduler (`--scheduler processes`, the default): every Batch AI job runs as process groups on this
machine, a nodeCount N job on N of the service's slots (runner.py)."""
