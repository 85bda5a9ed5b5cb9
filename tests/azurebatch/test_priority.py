"""priority.py: vmPriority -> what the account can get (issue 31 rule 2)."""
import datetime

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import priority
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal

BEFORE = datetime.date(2025, 9, 30)
AFTER = datetime.date(2025, 10, 1)


@pytest.mark.parametrize('mode', ['BatchService', 'UserSubscription', None])
def test_dedicated_is_dedicated_in_every_mode(mode):
    got = priority.node_priority('dedicated', {'poolAllocationMode': mode}, AFTER)
    assert got.kind == 'dedicated' and got.target_property == 'targetDedicatedNodes'
    assert priority.node_priority(None, {}, AFTER) == got


@pytest.mark.parametrize('mode', ['UserSubscription', 'usersubscription', 'User_Subscription'])
def test_user_subscription_accounts_get_spot(mode):
    got = priority.node_priority('lowpriority', {'poolAllocationMode': mode}, AFTER)
    assert got.kind == 'spot' and got.preemptible and got.target_property == 'targetLowPriorityNodes'


def test_batch_service_accounts_got_low_priority_until_its_retirement_then_spot_through_the_same_fields():
    """Microsoft's batch-spot-vms.md as updated after the retirement of low-priority VMs (MicrosoftDocs/azure-docs
    PR 314716, 2026): a Batch pool may hold Spot VMs whatever the account's allocation mode, through
    targetLowPriorityNodes / $TargetLowPriorityNodes, on the account's Spot/low-priority vCPU quota."""
    assert priority.node_priority('lowpriority', {'poolAllocationMode': 'BatchService'}, BEFORE).kind == \
        'lowpriority'
    for account in ({'poolAllocationMode': 'BatchService'}, {'poolAllocationMode': 'batch_service'}, {}):
        got = priority.node_priority('LowPriority', account, AFTER)
        assert got == priority.SPOT and got.preemptible
        assert (got.target_property, got.formula_variable) == ('targetLowPriorityNodes', '$TargetLowPriorityNodes')


def test_an_unknown_priority_is_refused():
    with pytest.raises(Refusal, match='spotty'):
        priority.node_priority('spotty', {}, AFTER)
