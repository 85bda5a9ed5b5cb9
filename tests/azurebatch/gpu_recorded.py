"""The real services' answers on VM sizes, images and pools (TEST CODE): tests/azurebatch/recorded/gpu_pools/.

`batch_recorded.json`: excerpts of Azure PowerShell's SessionRecords of the Batch data plane (API 2024-02-01.19.0):
the supported images, a pool after a stopped resize, an autoscale enable and the pool right after it.
`documented_sizes.json`: NOT a recording (none of these sizes is recorded publicly): Batch's `virtualMachineSkus`
entries, Microsoft.Compute usages and a Batch account's per-family quota as Microsoft documents them, each value
with its document (the file's `documents`). The README of the folder above says where each comes from.
"""
import copy
import json
import os

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'recorded', 'gpu_pools')


def _load(name):
    with open(os.path.join(FOLDER, name + '.json'), encoding='utf-8') as f:
        return json.load(f)


def recorded(title):
    """One interaction of batch_recorded.json (a deep copy: tests may change it)."""
    for item in _load('batch_recorded')['interactions']:
        if item['name'] == title:
            return copy.deepcopy(item)
    raise KeyError(title)


def supported_images():
    """The Linux entries of the recorded supported-image list (2024-11-13)."""
    return recorded('supported images (the Linux entries)')['response']['value']


def documented(key):
    """A list of documented_sizes.json: 'vmSkus', 'computeUsages' or 'batchAccountFamilyQuota'."""
    return copy.deepcopy(_load('documented_sizes')[key])


def size(name):
    """The documented `virtualMachineSkus` entry of a size."""
    return next(s for s in documented('vmSkus') if s['name'] == name)
