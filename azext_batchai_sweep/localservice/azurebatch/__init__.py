"""The Azure Batch scheduler of the local service: Batch AI clusters as Batch pools, jobs as Batch tasks.

The mapping modules (names, pools, priority, images, vm_sizes, quota, tasks, states, node_wrapper) are pure: REST
JSON in the Batch data-plane API 2024-02-01.19.0 shapes (camelCase) in and out, no network, and no Batch SDK import,
so `--scheduler processes` never pays for the SDK and the bodies can be checked against the spec.
"""
