"""What the service keeps: datadir.py (the data dir itself: created private, or refused when others may write to
it), store.py (service.db, SQLite in WAL mode: the resources and the scheduler's queue) and stored_spec.py (what is
kept of create requests: cluster credentials as digests, job secrets sealed with a key held in memory only)."""
