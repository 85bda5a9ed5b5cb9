"""VM sizes: a retired size is refused naming its successor, and a size must be one Batch offers in the region.

Batch AI's recipes and docs name sizes Azure has since retired (Standard_NC6 above all). A retired size can never get
a node, so asking for it would leave every job queued; swapping it silently would change the GPU and the bill. The
successor named is the nearest current size with at least as many GPUs of a newer generation (Microsoft's migration
guides for the NC, NCv2, NCv3, ND and NV series); the user decides.

`offered` is the list of sizes Batch offers in the account's region, as ARM answers it
(`Microsoft.Batch/locations/{location}/virtualMachineSkus`: `name`, `familyName`, `capabilities[{name, value}]`,
`batchSupportEndOfLife`), fetched by the account module. It is the one source of what a size is: its vCPUs (the
quota), its GPUs (the image choice and AZ_BATCHAI_NUM_GPUS) and the Hyper-V generations it boots (`HyperVGenerations`,
'V1', 'V2' or 'V1,V2': the image's generation must be one of them). A size's name says none of them reliably
(Standard_NC4as_T4_v3 has 1 GPU, Standard_NC24ads_A100_v4 1, not 4).
"""
import datetime

from .errors import Refusal

# (retired on, successor, sizes): Microsoft's retirement notices and migration guides for each series.
_RETIRED_SERIES = [
    ('2023-08-31', 'Standard_NC4as_T4_v3', ['standard_nc6', 'standard_nc6_promo']),  # NC (K80)
    ('2023-08-31', 'Standard_NC64as_T4_v3', ['standard_nc12', 'standard_nc12_promo', 'standard_nc24',
                                             'standard_nc24_promo', 'standard_nc24r', 'standard_nc24r_promo']),
    ('2023-09-06', 'Standard_NC24ads_A100_v4', ['standard_nc6s_v2', 'standard_nd6s']),  # NCv2 (P100), ND (P40)
    ('2023-09-06', 'Standard_NC48ads_A100_v4', ['standard_nc12s_v2', 'standard_nd12s']),
    ('2023-09-06', 'Standard_NC96ads_A100_v4', ['standard_nc24s_v2', 'standard_nc24rs_v2', 'standard_nd24s',
                                                'standard_nd24rs']),
    ('2023-09-06', 'Standard_NV36ads_A10_v5', ['standard_nv6', 'standard_nv6_promo']),  # NV (M60)
    ('2023-09-06', 'Standard_NV72ads_A10_v5', ['standard_nv12', 'standard_nv12_promo', 'standard_nv24',
                                               'standard_nv24_promo']),
    ('2025-09-30', 'Standard_NC24ads_A100_v4', ['standard_nc6s_v3']),  # NCv3 (V100)
    ('2025-09-30', 'Standard_NC48ads_A100_v4', ['standard_nc12s_v3']),
    ('2025-09-30', 'Standard_NC96ads_A100_v4', ['standard_nc24s_v3', 'standard_nc24rs_v3']),
]
RETIRED = {size: (datetime.date.fromisoformat(day), successor)
           for day, successor, sizes in _RETIRED_SERIES for size in sizes}


def retirement(vm_size):
    """(retired on, successor) of a retired size, or None."""
    return RETIRED.get((vm_size or '').lower())


def _end_of_life(sku):
    text = sku.get('batchSupportEndOfLife')
    if not text:
        return None
    return datetime.date.fromisoformat(str(text)[:10])


def check_vm_size(vm_size, offered, today):
    """The offered size's entry (its ARM JSON) for `vm_size`; Refusal for a retired size (naming the successor), a
    size Batch no longer supports, or a size not offered in the region."""
    retired = retirement(vm_size)
    if retired and today >= retired[0]:
        raise Refusal(
            "vmSize '{}' was retired by Azure on {}: no node of it can be allocated. Create the cluster with its "
            "successor, e.g. -s {} (it is not swapped for you: GPU and price differ).".format(
                vm_size, retired[0].isoformat(), retired[1]), code='VmSizeRetired')
    by_name = {str(sku.get('name', '')).lower(): sku for sku in offered or []}
    sku = by_name.get((vm_size or '').lower())
    if sku is None:
        family = (vm_size or '').lower().rstrip('0123456789')
        similar = sorted(s['name'] for key, s in by_name.items() if family and key.startswith(family[:10]))[:8]
        raise Refusal("vmSize '{}' is not offered by Azure Batch in this account's region{}. List what is: az batch "
                      'location list-skus --location LOCATION -o table.'.format(
                          vm_size, ' (similar sizes offered: {})'.format(', '.join(similar)) if similar else ''),
                      code='VmSizeNotOffered')
    end = _end_of_life(sku)
    if end is not None and today >= end:
        raise Refusal("vmSize '{}' reached its Batch end of life on {}: choose a current size.".format(
            vm_size, end.isoformat()), code='VmSizeRetired')
    return sku


def _capability(sku, name):
    for capability in sku.get('capabilities') or []:
        if str(capability.get('name', '')).lower() == name.lower():
            return capability.get('value')
    return None


def gpus(sku):
    """The GPUs of one node of an offered size (its `GPUs` capability; 0 without one)."""
    return int(_capability(sku, 'GPUs') or 0)


def vcpus(sku):
    """The vCPUs of one node of an offered size (its `vCPUs` capability)."""
    value = _capability(sku, 'vCPUs')
    if value is not None:
        return int(value)
    raise Refusal("Batch does not say how many vCPUs vmSize '{}' has: cannot check the quota.".format(
        sku.get('name')), code='VmSizeUnknown')


def offered_size(vm_size, offered):
    """The offered size's entry for `vm_size` (names compared case-insensitively: Batch answers them lower-cased),
    or None."""
    wanted = (vm_size or '').lower()
    return next((s for s in offered or [] if str(s.get('name', '')).lower() == wanted), None)


def hyperv_generations(sku):
    """The Hyper-V generations ('V1', 'V2') a node of an offered size boots (its `HyperVGenerations` capability), or
    None when the entry does not say."""
    value = _capability(sku or {}, 'HyperVGenerations')
    if not value:
        return None
    return frozenset(part.strip().upper() for part in str(value).split(',') if part.strip())
