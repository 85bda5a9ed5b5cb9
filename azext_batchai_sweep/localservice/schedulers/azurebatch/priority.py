"""Batch AI's `vmPriority` as the nodes a Batch account can actually get (issue 31 rule 2).

Batch has had two kinds of preemptible node, in the same pool fields (`targetLowPriorityNodes`,
`$TargetLowPriorityNodes`):
- `UserSubscription` accounts get Spot nodes (the subscription's Spot vCPU quota);
- `BatchService` accounts got low-priority nodes until Batch retired them on 2025-09-30; since then they get Spot
  nodes through the same fields, drawing on the account's total Spot/low-priority vCPU quota
  (`lowPriorityCoreQuota`, no per-family quota). Microsoft's "Use Spot VMs with Batch workloads"
  (articles/batch/batch-spot-vms.md, as updated after the retirement, MicrosoftDocs/azure-docs PR 314716) no longer
  ties Spot to an allocation mode, and "Batch service quotas and limits" (batch-quota-limit.md) says that for Spot
  nodes Batch enforces only the account's total core quota.
`dedicated` is dedicated in both modes. docs/azure-batch.md cites both pages.
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
    if allocation_mode(account) == USER_SUBSCRIPTION or today > LOW_PRIORITY_RETIRED:
        return SPOT
    return LOW_PRIORITY
