"""Jobs' outputs and metrics: output files, ranged reads, log tails and downloads through their download URLs; metric extraction from logs and the ranking of a sweep's jobs."""
