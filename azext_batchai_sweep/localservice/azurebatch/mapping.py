"""The Batch AI <-> Azure Batch mapping as the scheduler uses it: one object, so that the scheduler depends on
these few calls only (and its tests can hand it a mapping of their own).

`AbMapMapping` calls the mapping modules beside it (names, pools, images, priority, tasks, states): the agreed
functions of docs/azure-batch.md. Every call is lazy: the modules are imported at first use.
"""


class AbMapMapping:
    """What the scheduler asks of the mapping (each method names the module that answers)."""

    # ---- names.py: deterministic Batch ids ---------------------------------------------------------------------

    @staticmethod
    def pool_id(prefix, workspace, cluster):
        from . import names  # pylint: disable=import-outside-toplevel
        return names.pool_id(prefix, workspace, cluster)

    @staticmethod
    def batch_job_id(prefix, workspace, cluster):
        from . import names  # pylint: disable=import-outside-toplevel
        return names.batch_job_id(prefix, workspace, cluster)

    @staticmethod
    def task_id(job_key):
        from . import names  # pylint: disable=import-outside-toplevel
        return names.task_id(job_key)

    # ---- pools.py: a cluster as a pool -------------------------------------------------------------------------

    @staticmethod
    def check_pool(cluster_body, account):
        """None when Batch can make the cluster's pool, else the reason (errors.Refusal's)."""
        from . import pools  # pylint: disable=import-outside-toplevel
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        try:
            pools.pool_body('check', cluster_body, account, account.get('image'), _multi_node(cluster_body))
        except Refusal as ex:
            return ex.reason
        return None

    @staticmethod
    def pool_body(pool_id, cluster_body, spec, account):  # pylint: disable=unused-argument
        from . import pools  # pylint: disable=import-outside-toplevel
        return pools.pool_body(pool_id, cluster_body, account, account.get('image'), _multi_node(cluster_body))

    @staticmethod
    def job_body(job_id, pool_id):
        """The Batch job of a cluster: on its pool, left active when its tasks end (more come)."""
        return {'id': job_id, 'poolInfo': {'poolId': pool_id}, 'onAllTasksComplete': 'noaction'}

    # ---- tasks.py: a Batch AI job as a task ---------------------------------------------------------------------

    @staticmethod
    def task_body(task_id, job_body, spec, toolkit, cluster_body, layout):  # pylint: disable=unused-argument
        from . import tasks  # pylint: disable=import-outside-toplevel
        return tasks.task_body(task_id, dict(job_body, properties=spec), toolkit, cluster_body)

    @staticmethod
    def chunks(bodies, max_count):
        from . import tasks  # pylint: disable=import-outside-toplevel
        return tasks.chunks(bodies, max_count=max_count)

    @staticmethod
    def local_path(remote, layout):
        from . import tasks  # pylint: disable=import-outside-toplevel
        return tasks.local_path(remote, layout)

    # ---- states.py: a task's state as a Batch AI execution state ----------------------------------------------

    @staticmethod
    def task_outcome(task):
        from . import states  # pylint: disable=import-outside-toplevel
        return states.task_outcome(task)


def _multi_node(cluster_body):
    """A cluster of more than one node may run multi-node jobs: its pool needs inter-node communication."""
    from ..resources import cluster_slots  # pylint: disable=import-outside-toplevel
    return cluster_slots(cluster_body['properties']) > 1
