"""A cluster that may run multi-node jobs (max > 1) gets an image with MPI: a multi-node job's processes on the other
nodes start through mpirun (node_wrapper.mpi_spawn), so on an image without MPI such a job is refused at submit
with the reason, never left to fail on every node after the pool grew for it. Through the mapping the scheduler uses
(mapping.AbMapMapping), with supported images in the shape the data plane lists them."""
from azext_batchai_sweep.localservice.schedulers.azurebatch.mapping import AbMapMapping
from tests.azurebatch.test_images import HPC, JAMMY, NOBLE, TODAY  # noqa: F401 pylint: disable=unused-import

ACCOUNT = {'poolAllocationMode': 'BatchService'}


def _cluster(max_nodes=4, image=None):
    props = {'vmSize': 'Standard_D2s_v3', 'scaleSettings': {'autoScale': {'minimumNodeCount': 0,
                                                                          'maximumNodeCount': max_nodes}}}
    if image:
        props['virtualMachineConfiguration'] = {'imageReference': dict(image['imageReference'])}
    return {'name': 'c', 'properties': props}


def _mapping(*supported):
    mapping = AbMapMapping()
    mapping.supported_images = list(supported)
    return mapping


def _job(nodes):
    return {'nodeCount': nodes, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP',
            'customToolkitSettings': {'commandLine': 'true'}}


def test_a_cluster_of_several_nodes_is_a_pool_of_an_hpc_image_one_of_one_node_plain_ubuntu():
    mapping = _mapping(JAMMY, NOBLE, HPC)
    multi = mapping.pool_body('p', _cluster(4), None, ACCOUNT)
    single = mapping.pool_body('p', _cluster(1), None, ACCOUNT)
    assert multi['virtualMachineConfiguration']['imageReference']['offer'] == 'ubuntu-hpc'
    assert multi['virtualMachineConfiguration']['nodeAgentSKUId'] == HPC['nodeAgentSKUId']
    assert multi['enableInterNodeCommunication'] is True
    assert single['virtualMachineConfiguration']['imageReference']['offer'] == NOBLE['imageReference']['offer']
    assert mapping.check_job(_job(4), 'customToolkitSettings', _cluster(4)) is None


def test_a_multi_node_job_on_a_pool_without_mpi_is_refused_at_submit_with_the_reason():
    no_hpc = _mapping(JAMMY, NOBLE)
    reason = no_hpc.check_job(_job(2), 'customToolkitSettings', _cluster(4))
    assert 'has no MPI' in reason and 'ubuntu-hpc' in reason and 'the account offers no HPC image' in reason
    assert no_hpc.check_job(_job(1), 'customToolkitSettings', _cluster(4)) is None  # one node: no mpirun
    # the user's own image without MPI, on an account that offers HPC images: refused, naming the cluster's image
    given = _mapping(JAMMY, NOBLE, HPC).check_job(_job(2), 'customToolkitSettings',
                                                  _cluster(4, image=JAMMY))
    assert 'canonical/0001-com-ubuntu-server-jammy/22_04-lts' in given and "imageReference" in given
    # the user's own HPC image has MPI: no MPI refusal. Naming a Docker-compatible image makes the pool a container
    # pool (pools.container_pool), so the job runs in its container there; a plain job is refused for that reason
    boxed = dict(_job(2), containerSettings={'imageSourceRegistry': {'image': 'ubuntu:22.04'}})
    assert _mapping(JAMMY, HPC).check_job(boxed, 'customToolkitSettings', _cluster(4, image=HPC)) is None
    plain = _mapping(JAMMY, HPC).check_job(_job(2), 'customToolkitSettings', _cluster(4, image=HPC))
    assert 'MPI' not in plain and 'ContainerTaskSettingsNotFound' in plain
