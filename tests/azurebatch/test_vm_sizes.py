"""vm_sizes.py: retired sizes refused with their successor, sizes must be offered."""
import datetime

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import vm_sizes
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal

TODAY = datetime.date(2026, 11, 26)


def sku(name, family='standardNCASv3_T4Family', cpus=4, end=None):
    entry = {'name': name, 'familyName': family, 'capabilities': [{'name': 'vCPUs', 'value': str(cpus)},
                                                                  {'name': 'GPUs', 'value': '1'}]}
    if end:
        entry['batchSupportEndOfLife'] = end
    return entry


OFFERED = [sku('Standard_NC4as_T4_v3'), sku('Standard_NC8as_T4_v3', cpus=8), sku('Standard_D2s_v3', 'dsv3', 2),
           sku('Standard_NC6', 'standardNCFamily', 6)]


@pytest.mark.parametrize('size, successor', [
    ('Standard_NC6', 'Standard_NC4as_T4_v3'), ('standard_nc12', 'Standard_NC64as_T4_v3'),
    ('Standard_NC6s_v3', 'Standard_NC24ads_A100_v4'), ('Standard_NV6', 'Standard_NV36ads_A10_v5'),
    ('Standard_ND24rs', 'Standard_NC96ads_A100_v4'),
])
def test_a_retired_size_is_refused_naming_its_successor_even_when_listed(size, successor):
    with pytest.raises(Refusal) as refused:
        vm_sizes.check_vm_size(size, OFFERED, TODAY)
    assert refused.value.code == 'VmSizeRetired' and successor in refused.value.reason
    assert 'not swapped' in refused.value.reason


def test_a_size_is_taken_only_when_offered():
    assert vm_sizes.check_vm_size('standard_nc4as_t4_v3', OFFERED, TODAY)['name'] == 'Standard_NC4as_T4_v3'
    with pytest.raises(Refusal, match='not offered') as refused:
        vm_sizes.check_vm_size('Standard_NC16as_T4_v3', OFFERED, TODAY)
    assert 'Standard_NC4as_T4_v3' in refused.value.reason  # similar sizes named


def test_a_size_past_its_batch_end_of_life_is_refused():
    offered = [sku('Standard_X1', end='2026-01-01T00:00:00Z')]
    with pytest.raises(Refusal, match='end of life on 2026-01-01'):
        vm_sizes.check_vm_size('Standard_X1', offered, TODAY)
    assert vm_sizes.check_vm_size('Standard_X1', offered, datetime.date(2025, 12, 1))


def test_vcpus_and_gpus_come_from_the_capabilities():
    assert vm_sizes.vcpus(OFFERED[1]) == 8
    assert vm_sizes.gpus(OFFERED[1]) == 1 and vm_sizes.gpus({'name': 'x'}) == 0
    with pytest.raises(Refusal):
        vm_sizes.vcpus({'name': 'x', 'capabilities': []})


@pytest.mark.parametrize('name, gpus, cpus, generations', [
    ('Standard_NC4as_T4_v3', 1, 4, {'V1', 'V2'}), ('Standard_NC24ads_A100_v4', 1, 24, {'V2'}),
    ('Standard_D2ds_v6', 0, 2, {'V2'}), ('Standard_D2s_v3', 0, 2, {'V1', 'V2'}),
])
def test_what_a_size_is_comes_from_its_offered_entry_not_its_name(name, gpus, cpus, generations):
    """Issue 40 item 3 (documented entries: tests/azurebatch/recorded/gpu_pools/documented_sizes.json). The name's
    rule of the other schedulers (gpus.py: 6/12/24 cores -> 1/2/4 GPUs) says 0 for the T4 and 4 for the A100."""
    from azext_batchai_sweep.localservice.schedulers.gpus import gpus_per_node
    from tests.azurebatch.gpu_recorded import documented
    offered = documented('vmSkus')
    sku = vm_sizes.offered_size(name.lower(), offered)  # Batch answers sizes lower-cased
    assert sku['name'] == name
    assert (vm_sizes.gpus(sku), vm_sizes.vcpus(sku), vm_sizes.hyperv_generations(sku)) == (gpus, cpus, generations)
    if name in ('Standard_NC4as_T4_v3', 'Standard_NC24ads_A100_v4'):
        assert gpus_per_node(name) != gpus  # why the name cannot be the source
    assert vm_sizes.offered_size('Standard_NC6', offered) is None
    assert vm_sizes.hyperv_generations({'name': 'x', 'capabilities': []}) is None
