"""vCPU quota arithmetic: does the account's quota cover a cluster at its maximum node count? (issue 31 rule 1)

New Batch accounts often have a quota of 0 for GPU families: a pool asked for then never grows, and its jobs wait
for ever. So `cluster create` is refused unless

    needed = vCPUs per node x maximum node count  <=  quota - cores already in use

where the quota depends on the account's pool allocation mode and the nodes' priority:

- BatchService account, dedicated nodes: the family's `dedicatedCoreQuotaPerVMFamily` entry (0 when absent) when
  `dedicatedCoreQuotaPerVMFamilyEnforced`, and always the account's `dedicatedCoreQuota`;
- BatchService account, Spot nodes (low-priority until 2025-09-30): `lowPriorityCoreQuota`, the account's total
  (Batch enforces no per-family quota for them: batch-quota-limit.md);
- UserSubscription account, dedicated nodes: the subscription's compute quota in the region, the family's usage
  (`name.value` = the size's `familyName`) and `cores` (total regional vCPUs);
- UserSubscription account, Spot nodes: `lowPriorityCores` (total regional Spot vCPUs).

A UserSubscription account's quota comes from Microsoft.Compute usages (`compute_usages`: `name.value`, `limit`,
`currentValue`, which already count what is in use); without them it cannot be checked here, which is said, not
ignored.

Family names are compared by `family_key` (letters and digits only, lower-cased): the services spell one family
differently. Batch's SKU list and a Batch account's per-family quota write the T4 family `Standard NCASv3_T4
Family`, Microsoft.Compute usages `standardNCASv3_T4Family` (and the A100 families likewise), so an exact (or
merely case-insensitive) match reads the subscription's quota as 0.
"""
import re
from dataclasses import dataclass

from .errors import Refusal
from .priority import USER_SUBSCRIPTION, allocation_mode
from .vm_sizes import vcpus

RAISE_QUOTA = ('Request more in the Azure portal (Batch account > Quotas > Request quota increase{}), or create the '
               'cluster with fewer nodes (--max).')


@dataclass(frozen=True)
class QuotaLine:
    """One quota a cluster draws on: its name as the portal shows it, the limit, and what is in use."""
    name: str
    limit: int
    in_use: int = 0

    @property
    def available(self):
        return max(0, self.limit - self.in_use)


def family_key(name):
    """A VM family's name as one key whatever service wrote it: lower-case letters and digits only
    ('Standard NCASv3_T4 Family' and 'standardNCASv3_T4Family' are both 'standardncasv3t4family')."""
    return re.sub(r'[^a-z0-9]', '', str(name or '').lower())


def needed_cores(sku, max_nodes):
    """vCPUs a cluster holds at its maximum node count."""
    return vcpus(sku) * max(0, int(max_nodes))


def quota_lines(sku, priority, account, in_use=None, compute_usages=None):
    """The QuotaLines a cluster of `sku` nodes of `priority` (a NodePriority) draws on, or None when they cannot be
    known here (a UserSubscription account without `compute_usages`).

    `in_use` (BatchService accounts): cores the account's other pools already hold, {'family': that family's
    dedicated cores, 'dedicated': all dedicated cores, 'lowPriority': all preemptible cores}.
    """
    in_use = in_use or {}
    family = sku.get('familyName') or ''
    account = account or {}
    if allocation_mode(account) == USER_SUBSCRIPTION:
        if compute_usages is None:
            return None
        usages = {family_key((u.get('name') or {}).get('value')): u for u in compute_usages}

        def line(key, label):
            usage = usages.get(family_key(key)) or {}
            return QuotaLine(label, int(usage.get('limit') or 0), int(usage.get('currentValue') or 0))
        if priority.preemptible:
            return [line('lowPriorityCores', 'Total Regional Spot vCPUs (subscription)')]
        return [line(family, '{} vCPUs (subscription)'.format(family)),
                line('cores', 'Total Regional vCPUs (subscription)')]
    if priority.preemptible:
        return [QuotaLine('Spot/low-priority vCPUs (Batch account)', int(account.get('lowPriorityCoreQuota') or 0),
                          int(in_use.get('lowPriority') or 0))]
    lines = []
    if account.get('dedicatedCoreQuotaPerVMFamilyEnforced'):
        quotas = {family_key(q.get('name')): q for q in account.get('dedicatedCoreQuotaPerVMFamily') or []}
        lines.append(QuotaLine('{} dedicated vCPUs (Batch account)'.format(family),
                               int((quotas.get(family_key(family)) or {}).get('coreQuota') or 0),
                               int(in_use.get('family') or 0)))
    lines.append(QuotaLine('total dedicated vCPUs (Batch account)', int(account.get('dedicatedCoreQuota') or 0),
                           int(in_use.get('dedicated') or 0)))
    return lines


def check_quota(sku, max_nodes, priority, account, in_use=None, compute_usages=None):
    """Refusal unless every quota the cluster draws on covers it at `max_nodes`; returns warnings (a list of
    sentences) for what could not be checked."""
    needed = needed_cores(sku, max_nodes)
    lines = quota_lines(sku, priority, account, in_use, compute_usages)
    if lines is None:
        return ['The vCPU quota of this user-subscription Batch account comes from the subscription and was not '
                'checked: {} {} vCPUs are needed at the maximum node count.'.format(needed, priority.kind)]
    if needed == 0:
        return []
    for line in lines:
        if needed > line.available:
            where = '' if allocation_mode(account) != USER_SUBSCRIPTION else '; for a user-subscription account: ' \
                'Subscriptions > Usage + quotas'
            raise Refusal(
                "The cluster needs {} {} vCPUs ({} nodes of {} x {} vCPUs) but the quota '{}' leaves {} (limit {}, "
                'in use {}). '.format(needed, priority.kind, max_nodes, sku.get('name'), vcpus(sku), line.name,
                                      line.available, line.limit, line.in_use) + RAISE_QUOTA.format(where),
                code='QuotaExceeded')
    return []
