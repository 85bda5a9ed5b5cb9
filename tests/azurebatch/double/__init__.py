"""A lifecycle double of the Azure Batch data plane (TEST CODE ONLY; there is no Azure Batch emulator).

server.BatchDouble: loopback HTTPS (+ plain HTTP for Prism) answering the REST API of
tests/specs/batch-2024-02-01.19.0 for the real `azure.batch.BatchClient`; account.BatchAccount: pools, nodes as
slots, jobs, autoscale (formula.py), preemption, node removal; runner.py: tasks as local process groups;
entities.py: the resources and their JSON; api.py: one function per REST operation; odata.py: $filter/$select.
Fixtures: tests/azurebatch/conftest.py; overview: docs/azure-batch-double.md.
"""
from tests.azurebatch.double.server import BatchDouble, DoubleCredential, Faults

__all__ = ['BatchDouble', 'DoubleCredential', 'Faults']
