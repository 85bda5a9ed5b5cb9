"""Batch AI's `vmPriority` as the nodes a Batch account can actually get (issue 31 rule 2).

Batch has two kinds of preemptible node and the account's pool allocation mode decides which one a pool gets, in
the same pool fields (`targetLowPriorityNodes`, `$TargetLowPriorityNodes`):
- `UserSubscription` accounts get Spot nodes (the subscription's Spot vCPU quota);
- `BatchService` accounts got low-priority nodes, which Batch retired on 2025-09-30: from that day such an account
  can get no preemptible node at all, so `lowpriority` is refused with the reason, never silently made dedicated.
`dedicated` is dedicated in both modes.
"""
import datetime
from dataclasses import dataclass

from .errors import Refusal

LOW_PRIORITY_RETIRED = datetime.date(2025, 9, 30)
USER_SUBSCRIPTION = 'usersubscription'
BATCH_SERVICE = 'batchservice'


@dataclass(frozen=True)
class NodePriority:
    """What a cluster's nodes are on Batch."""
    kind: str  # 'dedicated', 'spot' or 'lowpriority' (what `local status` shows)
    target_property: str  # the pool's target node count property
    formula_variable: str  # the autoscale formula's target variable
    other_formula_variable: str  # the other target, which the formula keeps at 0

    @property
    def preemptible(self):
        return self.kind != 'dedicated'


DEDICATED = NodePriority('dedicated', 'targetDedicatedNodes', '$TargetDedicatedNodes', '$TargetLowPriorityNodes')
SPOT = NodePriority('spot', 'targetLowPriorityNodes', '$TargetLowPriorityNodes', '$TargetDedicatedNodes')
LOW_PRIORITY = NodePriority('lowpriority', 'targetLowPriorityNodes', '$TargetLowPriorityNodes',
                            '$TargetDedicatedNodes')


def allocation_mode(account):
    """The account's pool allocation mode, lower case ('batchservice' when the account does not say)."""
    mode = (account or {}).get('poolAllocationMode') or 'BatchService'
    return str(mode).replace('_', '').lower()


def node_priority(vm_priority, account, today):
    """The NodePriority of a cluster with Batch AI's `vmPriority` ('dedicated' or 'lowpriority') on `account` (its
    ARM properties: `poolAllocationMode`) on the date `today`; Refusal where the account can provide none."""
    priority = (vm_priority or 'dedicated').lower()
    if priority == 'dedicated':
        return DEDICATED
    if priority != 'lowpriority':
        raise Refusal("vmPriority '{}' is not a Batch AI priority: use 'dedicated' or 'lowpriority'.".format(
            vm_priority), code='InvalidRequestContent')
    mode = allocation_mode(account)
    if mode == USER_SUBSCRIPTION:
        return SPOT
    if today <= LOW_PRIORITY_RETIRED:
        return LOW_PRIORITY
    raise Refusal(
        "vmPriority 'lowpriority' cannot be provided by this Batch account: it allocates pools in Batch service mode, "
        'whose low-priority nodes Azure Batch retired on {}, and Spot nodes exist only in accounts in user '
        "subscription mode. Use vmPriority 'dedicated' (full price), or create a Batch account with "
        '--pool-allocation-mode UserSubscription (Spot) and start the service with it.'.format(
            LOW_PRIORITY_RETIRED.isoformat()), code='LowPriorityUnavailable')
