"""A local code folder sent with every job: packed into a content-addressed snapshot (snapshot.py, ignore.py) and
unpacked by each job before its command runs (job.py)."""
