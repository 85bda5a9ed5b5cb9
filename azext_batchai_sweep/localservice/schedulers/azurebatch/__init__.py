"""The Azure Batch scheduler of the local service (`--scheduler azure-batch`): Batch AI clusters as Batch pools
(one Batch job each), jobs as Batch tasks. docs/azure-batch.md has the mapping.

The mapping modules (names, pools, priority, images, vm_sizes, quota, tasks, states, node_wrapper) are pure: REST
JSON in the Batch data-plane API 2024-02-01.19.0 shapes (camelCase) in and out, no network, and no Batch SDK import,
so `--scheduler processes` never pays for the SDK and the bodies can be checked against the spec. mapping.py is
what the scheduler asks of them. auth.py: az's login as a token credential for the Batch resource; client.py: the
data-plane calls through the SDK's BatchClient with the project's retry rules; scheduler.py: submit, poll,
terminate, delete, re-attach, and the cluster hooks (pools); connect.py: the scheduler of a service start, checked.
storage/: the storage the clusters mount, read (and the task-log container signed for Batch) with az's token, and
the data roles that takes; the rest of the scheduler uses its public names only.
"""
