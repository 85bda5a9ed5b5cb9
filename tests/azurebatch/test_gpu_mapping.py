"""A cluster's VM size as the scheduler's mapping (mapping.AbMapMapping) reads it: GPUs, image and Hyper-V
generation from the region's offered size, one source for the pool's image and AZ_BATCHAI_NUM_GPUS (issue 40
item 3); a pool's container support from the cluster, each job checked against it at submit (issue 48 item 1).

The supported images are the real service's recorded list; the offered sizes are Microsoft's documented entries
(no public recording of these sizes exists): tests/azurebatch/recorded/gpu_pools. The task's command line runs the
node wrapper for real (as test_node_wrapper.py does), which sets AZ_BATCHAI_NUM_GPUS."""
import json

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import node_wrapper
from azext_batchai_sweep.localservice.schedulers.azurebatch.mapping import AbMapMapping
from tests.azurebatch.gpu_recorded import documented, supported_images
from tests.azurebatch.test_node_wrapper import Node, job

ACCOUNT = {'poolAllocationMode': 'BatchService'}
HPC_2204 = {'publisher': 'microsoft-dsvm', 'offer': 'ubuntu-hpc', 'sku': '2204'}
JAMMY_GEN1 = {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': '22_04-lts'}
FILE_URL = 'https://acct.file.core.windows.net/share'


@pytest.fixture
def mapping():
    made = AbMapMapping()
    made.supported_images = supported_images()
    made.offered_sizes = lambda: documented('vmSkus')  # as connect.py sets it: the facts' list
    return made


def cluster(vm_size, image=None):
    props = {'vmSize': vm_size, 'scaleSettings': {'manual': {'targetNodeCount': 1}},
             'nodeSetup': {'mountVolumes': {'azureFileShares': [{
                 'accountName': 'acct', 'azureFileUrl': FILE_URL, 'relativeMountPath': 'afs',
                 'credentials': {'accountKey': 'S3CRET=='}}]}}}
    if image:
        props['virtualMachineConfiguration'] = {'imageReference': dict(image)}
    return {'name': 'c1', 'properties': props}


def launch_spec(body):
    variables = {e['name']: e['value'] for e in body['environmentSettings']}
    return json.loads(variables[node_wrapper.TASK_VARIABLE])


@pytest.mark.parametrize('size, gpus, image', [
    ('Standard_NC4as_T4_v3', 1, ('microsoft-dsvm', 'ubuntu-hpc', '2204')),
    ('Standard_NC24ads_A100_v4', 1, ('microsoft-dsvm', 'ubuntu-hpc', '2204')),
    ('Standard_D2s_v3', 0, ('canonical', 'ubuntu-24_04-lts', 'server')),
])
def test_a_size_gets_its_gpus_and_an_image_for_them_from_the_offered_entry(mapping, size, gpus, image, tmp_path):
    """Fails on the old code: Standard_NC4as_T4_v3 (the successor the code names for Standard_NC6) got a CPU image
    and 0 GPUs, Standard_NC24ads_A100_v4 4 GPUs (the name's 24 cores)."""
    body = cluster(size)
    pool = mapping.pool_body('p1', body, None, ACCOUNT)
    reference = pool['virtualMachineConfiguration']['imageReference']
    assert (reference['publisher'], reference['offer'], reference['sku']) == image
    assert 'containerConfiguration' not in pool['virtualMachineConfiguration']  # plain jobs run there
    task = mapping.task_body('t1', job('echo "gpus=$AZ_BATCHAI_NUM_GPUS"'), {}, 'customToolkitSettings', body,
                             None)
    assert launch_spec(task)['gpus'] == gpus
    node = Node(tmp_path)
    assert node.run(task).returncode == 0
    assert node.stdouterr() == 'gpus={}\n'.format(gpus)


def test_an_image_of_a_generation_the_size_does_not_boot_is_refused_at_cluster_create(mapping):
    """The scheduler's check_cluster asks mapping.check_pool first: the refusal's reason is its answer (400)."""
    reason = mapping.check_pool(cluster('Standard_NC24ads_A100_v4', JAMMY_GEN1), ACCOUNT)
    assert reason.startswith("Image canonical/0001-com-ubuntu-server-jammy/22_04-lts is a Hyper-V generation 1 "
                             "image, but vmSize 'Standard_NC24ads_A100_v4' boots only generation 2")
    assert mapping.check_pool(cluster('Standard_NC4as_T4_v3', JAMMY_GEN1), ACCOUNT) is None


@pytest.mark.parametrize('image, with_container, refused', [
    (None, True, 'ContainersUnsupported'), (None, False, None),
    (HPC_2204, True, None), (HPC_2204, False, 'ContainerSettingsRequired'),
    (JAMMY_GEN1, True, 'ContainersUnsupported'),
])
def test_a_job_matches_its_clusters_container_support_at_submit(mapping, image, with_container, refused):
    """Fails on the old code: the default GPU image's pool got containerConfiguration (every plain job then failed
    ContainerTaskSettingsNotFound on its node), and containerSettings were accepted on any pool."""
    body = cluster('Standard_NC4as_T4_v3', image)
    pool = mapping.pool_body('p1', body, None, ACCOUNT)
    assert ('containerConfiguration' in pool['virtualMachineConfiguration']) == (image == HPC_2204)
    props = {'customToolkitSettings': {'commandLine': 'python train.py'}}
    if with_container:
        props['containerSettings'] = {'imageSourceRegistry': {'image': 'pytorch/pytorch:latest'}}
    reason = mapping.check_job(props, 'customToolkitSettings', body)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and reason.startswith('containerSettings: the cluster')
        assert ('ContainerTaskSettingsNotFound' in reason) == (refused == 'ContainerSettingsRequired')
