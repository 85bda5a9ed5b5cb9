"""quota.py: vCPU quota arithmetic by family, priority and allocation mode (property tests)."""
import pytest
from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.localservice.schedulers.azurebatch import quota
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from azext_batchai_sweep.localservice.schedulers.azurebatch.priority import DEDICATED, LOW_PRIORITY, SPOT


def sku(cpus, family='standardNCASv3_T4Family'):
    return {'name': 'Standard_NC{}as_T4_v3'.format(cpus), 'familyName': family,
            'capabilities': [{'name': 'vCPUs', 'value': str(cpus)}]}


small = st.integers(min_value=0, max_value=500)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=96), st.integers(min_value=0, max_value=40), small, small, small, small,
       st.booleans())
def test_batch_service_dedicated_needs_the_family_and_the_total_quota(cpus, nodes, family_quota, total_quota,
                                                                     family_used, total_used, enforced):
    account = {'poolAllocationMode': 'BatchService', 'dedicatedCoreQuota': total_quota,
               'dedicatedCoreQuotaPerVMFamilyEnforced': enforced,
               'dedicatedCoreQuotaPerVMFamily': [{'name': 'standardNCASv3_T4Family', 'coreQuota': family_quota},
                                                 {'name': 'otherFamily', 'coreQuota': 10000}]}
    in_use = {'family': family_used, 'dedicated': total_used}
    needed = cpus * nodes
    fits = needed <= max(0, total_quota - total_used) and (
        not enforced or needed <= max(0, family_quota - family_used))
    fits = fits or needed == 0
    if fits:
        assert quota.check_quota(sku(cpus), nodes, DEDICATED, account, in_use) == []
    else:
        with pytest.raises(Refusal) as refused:
            quota.check_quota(sku(cpus), nodes, DEDICATED, account, in_use)
        assert refused.value.code == 'QuotaExceeded'
        assert str(needed) in refused.value.reason and 'quota increase' in refused.value.reason


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=96), st.integers(min_value=0, max_value=40), small, small)
def test_preemptible_nodes_draw_on_the_low_priority_quota_only(cpus, nodes, low_quota, used):
    account = {'poolAllocationMode': 'BatchService', 'lowPriorityCoreQuota': low_quota, 'dedicatedCoreQuota': 0}
    if cpus * nodes <= max(0, low_quota - used) or nodes == 0:
        assert quota.check_quota(sku(cpus), nodes, LOW_PRIORITY, account, {'lowPriority': used}) == []
    else:
        with pytest.raises(Refusal, match='low-priority vCPUs'):
            quota.check_quota(sku(cpus), nodes, LOW_PRIORITY, account, {'lowPriority': used})


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=96), st.integers(min_value=1, max_value=40), small, small, small, small,
       st.booleans())
def test_user_subscription_accounts_use_the_subscription_quota(cpus, nodes, family_limit, family_current,
                                                               spot_limit, spot_current, spot):
    usages = [{'name': {'value': 'standardNCASv3_T4Family'}, 'limit': family_limit, 'currentValue': family_current},
              {'name': {'value': 'cores'}, 'limit': 10000, 'currentValue': 0},
              {'name': {'value': 'lowPriorityCores'}, 'limit': spot_limit, 'currentValue': spot_current}]
    account = {'poolAllocationMode': 'UserSubscription'}
    limit, current = (spot_limit, spot_current) if spot else (family_limit, family_current)
    priority = SPOT if spot else DEDICATED
    if cpus * nodes <= max(0, limit - current):
        assert quota.check_quota(sku(cpus), nodes, priority, account, compute_usages=usages) == []
    else:
        with pytest.raises(Refusal, match='subscription'):
            quota.check_quota(sku(cpus), nodes, priority, account, compute_usages=usages)


def test_a_new_account_with_no_gpu_quota_is_refused_before_it_spends():
    account = {'poolAllocationMode': 'BatchService', 'dedicatedCoreQuota': 500,
               'dedicatedCoreQuotaPerVMFamilyEnforced': True,
               'dedicatedCoreQuotaPerVMFamily': [{'name': 'standardDSv3Family', 'coreQuota': 100}]}
    with pytest.raises(Refusal, match=r"needs 16 dedicated vCPUs \(4 nodes of Standard_NC4as_T4_v3 x 4 vCPUs\)"):
        quota.check_quota(sku(4), 4, DEDICATED, account)


def test_a_user_subscription_account_without_usages_is_said_unchecked():
    warnings = quota.check_quota(sku(4), 2, SPOT, {'poolAllocationMode': 'UserSubscription'})
    assert len(warnings) == 1 and '8 spot vCPUs' in warnings[0]


# ---- family names as the services spell them (tests/azurebatch/recorded/gpu_pools/documented_sizes.json) ----------

@pytest.mark.parametrize('size', ['Standard_NC4as_T4_v3', 'Standard_NC24ads_A100_v4'])
def test_a_user_subscription_family_quota_is_found_whatever_the_spelling(size):
    """Issue 48 item 3 (fails on the old code: Batch's SKU list says 'Standard NCASv3_T4 Family', Microsoft.Compute
    usages 'standardNCASv3_T4Family'; the quota was read as 0 and the cluster refused)."""
    from tests.azurebatch.gpu_recorded import documented, size as documented_size
    sku, usages = documented_size(size), documented('computeUsages')
    account = {'poolAllocationMode': 'UserSubscription'}
    family_line = quota.quota_lines(sku, DEDICATED, account, compute_usages=usages)[0]
    usage = next(u for u in usages if quota.family_key(u['name']['value']) == quota.family_key(sku['familyName']))
    assert usage['name']['value'] != sku['familyName']  # the two services' spellings differ
    assert family_line.limit == usage['limit'] > 0
    assert quota.check_quota(sku, 1, DEDICATED, account, compute_usages=usages) == []


def test_a_batch_account_family_quota_is_found_whatever_the_spelling():
    from tests.azurebatch.gpu_recorded import documented, size as documented_size
    sku = documented_size('Standard_NC4as_T4_v3')
    for name in ('Standard NCASv3_T4 Family', 'standardNCASv3_T4Family', 'STANDARD-NCASV3-T4-FAMILY'):
        account = {'poolAllocationMode': 'BatchService', 'dedicatedCoreQuota': 100,
                   'dedicatedCoreQuotaPerVMFamilyEnforced': True,
                   'dedicatedCoreQuotaPerVMFamily': [{'name': name, 'coreQuota': 8}]}
        assert quota.quota_lines(sku, DEDICATED, account)[0].limit == 8
        assert quota.check_quota(sku, 2, DEDICATED, account) == []
        with pytest.raises(Refusal, match="leaves 8 \\(limit 8"):
            quota.check_quota(sku, 3, DEDICATED, account)
    assert documented('batchAccountFamilyQuota')[0]['name'] == sku['familyName']


@pytest.mark.parametrize('one, other, same', [
    ('Standard NCASv3_T4 Family', 'standardNCASv3_T4Family', True),
    ('StandardNCADSA100v4Family', 'standardNCADSA100v4Family', True),
    ('standardNDSv2Family', 'standardNDSFamily', False), ('standardDSv3Family', 'standardDSv5Family', False),
])
def test_family_keys(one, other, same):
    assert (quota.family_key(one) == quota.family_key(other)) == same
