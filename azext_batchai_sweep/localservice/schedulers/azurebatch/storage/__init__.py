"""Storage access on Azure Batch: what the service reads from, and lets Batch write to, the storage a cluster
mounts, with az's token (no storage key on disk), and the roles that takes.

- mounts.py: which storage a cluster mounts and where a job's directories are on it (NODE_ROOTS, cluster_storage,
  job_mounts, storage_folders, logs_account, blob_endpoint); pure;
- rest.py: reading Azure Storage with az's token (STORAGE_RESOURCE, StorageClient, ShareReadError, entry_name,
  copy_new_bytes, local_file), for both services;
- share_reader.py: a job's directories on a mounted Azure file share (FilesClient), and ShareMirror, which copies
  what is new on mounted shares and containers into the job's folders of the data dir;
- blob_reader.py: the same for a mounted Blob container (BlobClient, copy_blobs);
- task_logs.py: Batch's own stdout/stderr of each task, uploaded by Batch to a task-log container with a
  write-only user delegation SAS and read back (TaskLogs);
- roles.py: the data roles az's login needs on that storage (STORAGE_READ, TASK_LOGS_ROLE), checked at
  `local start` and `cluster create` (StorageRoleCheck, check_cluster_storage), and named in warnings
  (missing_role_hint).

The rest of the scheduler uses these public names only; these modules import nothing of the scheduler but its
login (auth.py), errors (errors.py) and ARM calls (account.py, preflight.py's permission checks).
"""
