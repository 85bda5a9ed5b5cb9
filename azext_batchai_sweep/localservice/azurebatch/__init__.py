"""The Azure Batch scheduler (`--scheduler azure-batch`): every Batch AI cluster is a Batch pool (and one Batch job),
every Batch AI job one Batch task. docs/azure-batch.md has the mapping.

auth.py: az's login as a token credential for the Batch resource; client.py: the data-plane calls through the
SDK's BatchClient with the project's retry rules; scheduler.py: submit, poll, terminate, delete, re-attach, and the
cluster hooks (pools). The mapping modules (names, pools, tasks, states, ...) turn Batch AI bodies into Batch REST
JSON and back.
"""
