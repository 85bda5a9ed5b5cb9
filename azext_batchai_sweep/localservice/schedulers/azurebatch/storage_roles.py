"""az's data role on the storage the service reads job outputs from (issue 31 rule 4), checked where it matters.

The service reads what a cluster's mounted Azure Files share or Blob container holds with az's token (no key on
disk), so az's login needs a data role there: an Owner or Contributor is not enough. Checked:
- at `local start`, for every cluster the data dir already holds (a restarted service reads their outputs at once);
- at `cluster create`, for the storage the new cluster mounts, before its pool is made.
A missing role refuses with the role to assign and the `az role assignment create` that assigns it
(preflight.check_storage_data_role); the storage accounts are found, and the permissions read, through ARM with
az's login (preflight.check_cluster_storage).
"""
import json


class StorageRoleCheck:
    """check(cluster_props): errors.Refusal unless az's login may read outputs from every storage account the
    cluster mounts. ``arm_credential``/``arm``: az's login for ARM and its target (account.ArmTarget; None: az's
    active cloud and subscription, looked up at first use)."""

    def __init__(self, arm_credential=None, arm=None):
        self._credential, self._arm = arm_credential, arm

    @property
    def arm(self):
        if self._arm is None:
            from .account import az_arm_target  # pylint: disable=import-outside-toplevel
            self._arm = az_arm_target()
        return self._arm

    def __call__(self, cluster_props):
        from . import preflight  # pylint: disable=import-outside-toplevel
        if preflight.cluster_storage(cluster_props):  # no mount, no ARM call
            preflight.check_cluster_storage(cluster_props, self._credential, self.arm)


def check_stored_clusters(store, check):
    """``check`` (a StorageRoleCheck) for every cluster the store holds; errors.Refusal of the first refused."""
    for _, text in store.page_by_prefix('cluster', '', 0, 1000000):
        check(json.loads(text).get('properties') or {})
