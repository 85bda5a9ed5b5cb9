"""The Batch AI <-> Azure Batch mapping as the scheduler uses it: one object, so that the scheduler depends on
these few calls only (and its tests can hand it a mapping of their own).

`AbMapMapping` calls the pure mapping modules beside it (names, pools, images, priority, vm_sizes, tasks, states,
node_wrapper), lazily: they are imported at first use. What it needs of the account beyond its ARM properties is
set on it once at start (connect.py): the supported images (the pool's image and node agent) and the region's
offered VM sizes (what a size is: its GPUs, for the image and AZ_BATCHAI_NUM_GPUS, and its Hyper-V generations).
"""
import datetime
import os

from .storage.mounts import NODE_ROOTS, TASK_ROOT

# Batch's own stdout/stderr of the task (the wrapper's, and whatever failed before it ran), served beside the job's.
BATCH_STREAMS = {'stdout.txt': 'batch-stdout.txt', 'stderr.txt': 'batch-stderr.txt'}


def _today():
    return datetime.datetime.now(datetime.timezone.utc).date()


class AbMapMapping:
    """What the scheduler asks of the mapping (each method names the module that answers)."""

    def __init__(self):
        self.supported_images = []  # the account's `supportedimages` (data plane), set at start
        # () -> the region's offered VM sizes (preflight.AccountFacts.vm_skus, fetched when first needed), set at
        # start; None: not known (a service built without them), when GPUs come from the size's name (gpus.py)
        self.offered_sizes = None
        self._payload = None

    # ---- names.py: deterministic Batch ids ---------------------------------------------------------------------

    @staticmethod
    def pool_id(prefix, workspace, cluster, subscription, resource_group):
        from . import names  # pylint: disable=import-outside-toplevel
        return names.pool_id(prefix, workspace, cluster, subscription, resource_group)

    @staticmethod
    def batch_job_id(prefix, workspace, cluster, subscription, resource_group):
        from . import names  # pylint: disable=import-outside-toplevel
        return names.batch_job_id(prefix, workspace, cluster, subscription, resource_group)

    @staticmethod
    def task_id(job_key, incarnation=''):
        from . import names  # pylint: disable=import-outside-toplevel
        return names.task_id(job_key, incarnation)

    # ---- pools.py, images.py, vm_sizes.py: a cluster as a pool --------------------------------------------------

    def check_pool(self, cluster_body, account, spec=None):
        """None when Batch can make the cluster's pool, else the reason (errors.Refusal's)."""
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        try:
            self.pool_body('check', cluster_body, spec or {'properties': cluster_body['properties']}, account)
        except Refusal as ex:
            return ex.reason
        return None

    def pool_body(self, pool_id, cluster_body, spec, account):
        """The pool add JSON of a cluster (its create request `spec`, which holds the keys and password)."""
        from . import pools, vm_sizes  # pylint: disable=import-outside-toplevel
        props = (spec or {}).get('properties') or cluster_body['properties']
        retired = vm_sizes.retirement(props.get('vmSize'))
        if retired and _today() >= retired[0]:
            # The size's own refusal (naming the successor) comes before the offered sizes are looked at.
            vm_sizes.check_vm_size(props['vmSize'], [], _today())
        image = self.image(props)
        return pools.pool_body(pool_id, props, account, image, _multi_node(props),
                               containers=pools.container_pool(props, image))

    def offered_size(self, vm_size):
        """The region's offered size (its ARM JSON) named `vm_size`, or None (sizes not known, or not offered)."""
        from . import vm_sizes  # pylint: disable=import-outside-toplevel
        return vm_sizes.offered_size(vm_size, self.offered_sizes()) if self.offered_sizes is not None else None

    def gpus(self, cluster_props):
        """The GPUs of one node of the cluster: its offered size's `GPUs` capability (the name's rule of gpus.py
        only when the region's sizes are not known)."""
        from . import vm_sizes  # pylint: disable=import-outside-toplevel
        sku = self.offered_size(cluster_props.get('vmSize'))
        if sku is not None:
            return vm_sizes.gpus(sku)
        from ..gpus import gpus_per_node  # pylint: disable=import-outside-toplevel
        return gpus_per_node(cluster_props.get('vmSize')) if self.offered_sizes is None else 0

    def image(self, cluster_props):
        """images.ChosenImage of the cluster: an image with NVIDIA drivers for a size with GPUs, of a Hyper-V
        generation the size boots (Refusal for a given image of another generation)."""
        from . import images, vm_sizes  # pylint: disable=import-outside-toplevel
        sku = self.offered_size(cluster_props.get('vmSize'))
        return images.choose_image((cluster_props.get('virtualMachineConfiguration') or {}).get('imageReference'),
                                   self.supported_images, _today(), gpu=self.gpus(cluster_props) > 0,
                                   generations=vm_sizes.hyperv_generations(sku), mpi=_multi_node(cluster_props),
                                   vm_size=cluster_props.get('vmSize'))

    def _pool_image(self, cluster_props):
        """The image reference the cluster's pool was made with (pool_body's choice), or None when it cannot be
        told (no supported images known)."""
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        try:
            return self.image(cluster_props).image_reference
        except Refusal:
            return None

    @staticmethod
    def scale_request(cluster_props, account):
        """(autoscale?, the body of a pool resize or enable-autoscale request) for new scale settings."""
        from . import pools, priority  # pylint: disable=import-outside-toplevel
        node_priority = priority.node_priority(cluster_props.get('vmPriority'), account, _today())
        fields = pools.scale_settings(cluster_props, node_priority)
        if fields.pop('enableAutoScale'):
            return True, fields
        return False, fields

    @staticmethod
    def job_body(job_id, pool_id):
        from . import tasks  # pylint: disable=import-outside-toplevel
        return tasks.batch_job_body(job_id, pool_id)

    # ---- tasks.py: a Batch AI job as a task ---------------------------------------------------------------------

    def check_job(self, props, toolkit, cluster_body):
        """None when the cluster's pool can run the job and its task fits a Batch request, else the reason."""
        from . import node_wrapper, tasks  # pylint: disable=import-outside-toplevel
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        cluster_props = cluster_body['properties']
        try:
            tasks.check_job(props, toolkit, cluster_props, _multi_node(cluster_props),
                            containers=self._container_pool(cluster_props))
            self._check_mpi(props, cluster_props)
            if self._payload is None:
                self._payload = node_wrapper.payload()
            tasks.check_task_size(props, toolkit, cluster_props, self._payload)
        except Refusal as ex:
            return ex.reason
        return None

    def _check_mpi(self, props, cluster_props):
        """Refusal for a multi-node job on a pool whose image has no MPI: its processes on the other nodes start
        through mpirun (node_wrapper.mpi_spawn), which would fail on every node after the pool grew for it."""
        from . import images  # pylint: disable=import-outside-toplevel
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        nodes = int(props.get('nodeCount') or 1)
        image = self._pool_image(cluster_props) if nodes > 1 else None
        if image is not None and not images.has_mpi(image):
            raise Refusal('nodeCount {}: the cluster\'s pool runs image {} ({}), which has no MPI, and a job of '
                          'several nodes starts its processes on the other nodes through mpirun. Create the cluster '
                          'with an image that ships MPI (one of Azure\'s HPC images, e.g. microsoft-dsvm ubuntu-hpc: '
                          'az batch pool supported-images list), or give the job nodeCount 1.'.format(
                              nodes, '/'.join(str(image.get(k)) for k in ('publisher', 'offer', 'sku')),
                              'the account offers no HPC image' if _is_default_image(cluster_props) else
                              'the cluster\'s imageReference'), code='MultiNodeNeedsMpi')

    def task_body(self, task_id, job_body, spec, toolkit, cluster_body, layout,  # pylint: disable=unused-argument
                  output_container_url=None, code_url=None):
        """The task add JSON; ``output_container_url``: the task-log container's SAS URL (storage/task_logs.py), where
        Batch uploads the task's own stdout/stderr at its completion (None: no outputFiles)."""
        from . import node_wrapper, tasks  # pylint: disable=import-outside-toplevel
        if self._payload is None:
            self._payload = node_wrapper.payload()
        return tasks.task_body(task_id, job_body, toolkit, cluster_body['properties'], spec,
                               output_container_url=output_container_url, payload=self._payload,
                               gpus=self.gpus(cluster_body['properties']), code_url=code_url)

    def _container_pool(self, cluster_props):
        """Whether the cluster's pool has a container configuration (pools.container_pool, as pool_body decided
        it); None when its image can no longer be chosen (the pool is there: Batch judges the task)."""
        from . import pools  # pylint: disable=import-outside-toplevel
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        try:
            return pools.container_pool(cluster_props, self.image(cluster_props))
        except Refusal:
            return None

    @staticmethod
    def chunks(bodies, max_count):
        from . import tasks  # pylint: disable=import-outside-toplevel
        return tasks.chunks(bodies, max_count=max_count)

    @staticmethod
    def local_path(remote, layout):
        """Where the task file `remote` (relative to the task directory) goes in the job's folders of the data
        dir, or None: the job's stdouterr and output directories when the wrapper wrote them in the task's
        working directory, and Batch's own stdout/stderr of the task (as batch-stdout.txt / batch-stderr.txt)."""
        from ...layout import output_paths  # pylint: disable=import-outside-toplevel
        if remote in BATCH_STREAMS:
            return os.path.join(layout.stdouterr_dir, BATCH_STREAMS[remote])
        stdouterr, outputs, _ = output_paths(layout.props, NODE_ROOTS)
        remote_path = TASK_ROOT + '/' + remote
        for node_dir, local_dir in [(stdouterr, layout.stdouterr_dir),
                                    *[(outputs[k], layout.outputs[k]) for k in outputs if k in layout.outputs]]:
            if remote_path.startswith(node_dir + '/'):
                return os.path.join(local_dir, remote_path[len(node_dir) + 1:])
        return None

    # ---- states.py: a task's state as a Batch AI execution state ----------------------------------------------

    @staticmethod
    def task_outcome(task, exit_text=None):
        from . import states  # pylint: disable=import-outside-toplevel
        return states.outcome(task, exit_record=_exit_record(exit_text))

    @staticmethod
    def exit_file():
        """The task file (relative to the task directory) where the wrapper records how the job ended."""
        from . import node_wrapper  # pylint: disable=import-outside-toplevel
        return 'wd/' + node_wrapper.EXIT_FILE

    @staticmethod
    def cannot_grow(pool, nodes=(), needed=1):
        """The error ({code, message}) why a pool cannot run a job of `needed` nodes (states.cannot_grow), or
        None."""
        from . import states  # pylint: disable=import-outside-toplevel
        return states.cannot_grow(pool, nodes, needed)

    @staticmethod
    def cluster_state(pool, nodes):
        from . import states  # pylint: disable=import-outside-toplevel
        return states.cluster_state(pool, nodes)


def _exit_record(text):
    try:
        step, code = (text or '').split()
        return step, int(code)
    except ValueError:
        return None


def _is_default_image(cluster_props):
    from . import images  # pylint: disable=import-outside-toplevel
    return images._is_default(  # pylint: disable=protected-access
        (cluster_props.get('virtualMachineConfiguration') or {}).get('imageReference'))


def _multi_node(cluster_props):
    """A cluster of more than one node may run multi-node jobs: its pool needs inter-node communication."""
    from .pools import max_nodes  # pylint: disable=import-outside-toplevel
    return max_nodes(cluster_props) > 1
