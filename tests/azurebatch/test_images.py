"""images.py: image and node agent chosen from the supported-image list only (property tests)."""
import datetime

import pytest
from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.localservice.schedulers.azurebatch import images
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from tests.azurebatch.batch_shapes import validate

TODAY = datetime.date(2026, 11, 26)


def image(publisher, offer, sku, agent, end=None, verified=True, os_type='linux', capabilities=()):
    entry = {'nodeAgentSKUId': agent, 'osType': os_type,
             'imageReference': {'publisher': publisher, 'offer': offer, 'sku': sku, 'version': 'latest'},
             'verificationType': 'verified' if verified else 'unverified', 'capabilities': list(capabilities)}
    if end:
        entry['batchSupportEndOfLife'] = end.isoformat() + 'T00:00:00Z'
    return entry


JAMMY = image('canonical', '0001-com-ubuntu-server-jammy', '22_04-lts', 'batch.node.ubuntu 22.04',
              datetime.date(2027, 4, 30))
NOBLE = image('canonical', 'ubuntu-24_04-lts', 'server', 'batch.node.ubuntu 24.04', datetime.date(2029, 4, 30))
FOCAL = image('canonical', '0001-com-ubuntu-server-focal', '20_04-lts', 'batch.node.ubuntu 20.04',
              datetime.date(2025, 4, 23))
HPC = image('microsoft-dsvm', 'ubuntu-hpc', '2204', 'batch.node.ubuntu 22.04', datetime.date(2027, 4, 30),
            capabilities=['DockerCompatible', 'NvidiaTeslaDriverInstalled'])
WINDOWS = image('microsoftwindowsserver', 'windowsserver', '2022-datacenter', 'batch.node.windows amd64',
                os_type='windows')
SUPPORTED = [JAMMY, NOBLE, FOCAL, HPC, WINDOWS]


def test_the_supported_images_here_have_batch_shape():
    for entry in SUPPORTED:
        validate('ImageInformation', entry)


def test_batch_ai_default_image_becomes_a_current_ubuntu_with_the_listed_node_agent():
    default = {'publisher': 'microsoft-dsvm', 'offer': 'amlcompute', 'sku': 'runtime-gen1-ubuntu18',
               'version': 'latest'}
    for ref in (None, default):
        chosen = images.choose_image(ref, SUPPORTED, TODAY)
        assert chosen.image_reference['offer'] == 'ubuntu-24_04-lts'  # the latest end of life
        assert chosen.node_agent_sku_id == 'batch.node.ubuntu 24.04'
    gpu = images.choose_image(None, SUPPORTED, TODAY, gpu=True)
    assert gpu.image_reference['offer'] == 'ubuntu-hpc' and 'DockerCompatible' in gpu.capabilities


def test_a_given_image_is_matched_in_the_list_and_keeps_its_version():
    chosen = images.choose_image({'publisher': 'Canonical', 'offer': '0001-com-ubuntu-server-jammy',
                                  'sku': '22_04-LTS', 'version': '22.04.202401010'}, SUPPORTED, TODAY)
    assert chosen.node_agent_sku_id == 'batch.node.ubuntu 22.04'
    assert chosen.image_reference['version'] == '22.04.202401010' and chosen.warnings == []


def test_an_end_of_life_image_is_refused_and_a_near_one_warned():
    with pytest.raises(Refusal, match='end of life on 2025-04-23') as refused:
        images.choose_image(FOCAL['imageReference'], SUPPORTED, TODAY)
    assert refused.value.code == 'ImageEndOfLife'
    near = images.choose_image(JAMMY['imageReference'], SUPPORTED, datetime.date(2027, 3, 1))
    assert near.warnings and '2027-04-30' in near.warnings[0]


def test_an_image_batch_does_not_support_or_a_custom_image_is_refused():
    with pytest.raises(Refusal, match='not supported') as refused:
        images.choose_image({'publisher': 'canonical', 'offer': 'ubuntuserver', 'sku': '16.04-lts'}, SUPPORTED,
                            TODAY)
    assert '0001-com-ubuntu-server-jammy' in refused.value.reason
    with pytest.raises(Refusal, match='custom image'):
        images.choose_image({'virtualMachineImageId': '/subscriptions/s/images/i'}, SUPPORTED, TODAY)
    with pytest.raises(Refusal, match='no current Ubuntu'):
        images.choose_image(None, [FOCAL, WINDOWS], TODAY)


days = st.integers(min_value=-800, max_value=2000)


@st.composite
def supported_lists(draw):
    entries = []
    for i in range(draw(st.integers(min_value=0, max_value=8))):
        publisher, offer = draw(st.sampled_from([('canonical', 'ubuntu-24_04-lts'), ('canonical', 'jammy-ubuntu'),
                                                 ('microsoft-dsvm', 'ubuntu-hpc'), ('openlogic', 'centos'),
                                                 ('microsoft-azure-batch', 'ubuntu-server-container')]))
        end = draw(st.one_of(st.none(), days.map(lambda d: TODAY + datetime.timedelta(days=d))))
        entries.append(image(publisher, offer, 'sku{}'.format(i), 'agent-{}'.format(i), end,
                             verified=draw(st.booleans()), os_type=draw(st.sampled_from(['linux', 'windows']))))
    return entries


@settings(max_examples=300, deadline=None)
@given(supported_lists(), st.booleans(), st.booleans())
def test_the_default_choice_is_always_a_current_linux_entry_of_the_list_with_its_own_node_agent(supported, gpu, mpi):
    try:
        chosen = images.choose_image(None, supported, TODAY, gpu=gpu, mpi=mpi)
    except Refusal:
        assert not any(e['osType'] == 'linux' and 'ubuntu' in e['imageReference']['offer'] and (
            'batchSupportEndOfLife' not in e or e['batchSupportEndOfLife'][:10] > TODAY.isoformat())
            for e in supported)
        return
    entry = next(e for e in supported if e['nodeAgentSKUId'] == chosen.node_agent_sku_id)
    assert {k: entry['imageReference'][k] for k in ('publisher', 'offer', 'sku')} == \
        {k: chosen.image_reference[k] for k in ('publisher', 'offer', 'sku')}
    assert entry['osType'] == 'linux'
    assert 'batchSupportEndOfLife' not in entry or entry['batchSupportEndOfLife'][:10] > TODAY.isoformat()
    # a cluster of several nodes gets an image with MPI whenever the list has a current one
    if mpi and any(e['osType'] == 'linux' and images.has_mpi(e['imageReference']) and (
            'batchSupportEndOfLife' not in e or e['batchSupportEndOfLife'][:10] > TODAY.isoformat())
            for e in supported):
        assert images.has_mpi(chosen.image_reference)


def test_a_multi_node_cluster_gets_an_hpc_image_with_mpi_by_default():
    assert images.choose_image(None, SUPPORTED, TODAY, mpi=True).image_reference['offer'] == 'ubuntu-hpc'
    single = images.choose_image(None, SUPPORTED, TODAY)
    assert single.image_reference['offer'] == 'ubuntu-24_04-lts' and not images.has_mpi(single.image_reference)
    # no HPC image offered: the usual Ubuntu (multi-node jobs are then refused at submit: mapping.check_job)
    assert not images.has_mpi(images.choose_image(None, [JAMMY], TODAY, mpi=True).image_reference)
    assert images.has_mpi({'publisher': 'almalinux', 'offer': 'almalinux-hpc', 'sku': '8_7-hpc-gen2'})
    assert not images.has_mpi({'publisher': 'canonical', 'offer': 'hpcless-ubuntu', 'sku': 'x'})


@settings(max_examples=300, deadline=None)
@given(supported_lists(), st.integers(min_value=0, max_value=7))
def test_a_given_image_is_taken_only_from_the_list_and_never_past_end_of_life(supported, pick):
    if not supported:
        return
    wanted = supported[pick % len(supported)]
    try:
        chosen = images.choose_image(wanted['imageReference'], supported, TODAY)
    except Refusal as refused:
        assert wanted['osType'] == 'windows' or wanted['batchSupportEndOfLife'][:10] <= TODAY.isoformat()
        assert refused.code in ('ImageEndOfLife', 'UnsupportedImage')
        return
    assert chosen.node_agent_sku_id == wanted['nodeAgentSKUId']
    end = wanted.get('batchSupportEndOfLife')
    near = end is not None and datetime.date.fromisoformat(end[:10]) - TODAY <= images.NEAR_END_OF_LIFE
    assert bool(chosen.warnings) == near


# ---- Hyper-V generations, on the recorded supported-image list (tests/azurebatch/recorded/gpu_pools) -----------

def _size_generations(name):
    from azext_batchai_sweep.localservice.schedulers.azurebatch import vm_sizes
    from tests.azurebatch.gpu_recorded import size
    return vm_sizes.hyperv_generations(size(name))


def _recorded():
    from tests.azurebatch.gpu_recorded import supported_images
    return supported_images()


def test_the_recorded_list_pairs_generation_1_and_2_images():
    by_sku = {i['imageReference']['sku']: images.generation(i) for i in _recorded()
              if i['imageReference']['publisher'] == 'canonical'}
    assert by_sku['22_04-lts'] == 'V1' and by_sku['22_04-lts-gen2'] == 'V2'
    assert by_sku['server'] == 'V2' and by_sku['server-gen1'] == 'V1'
    for entry in _recorded():
        validate('ImageInformation', entry)


@pytest.mark.parametrize('generations', [None, frozenset({'V1', 'V2'}), frozenset({'V2'})])
def test_the_default_cpu_image_is_generation_2_wherever_the_size_boots_it(generations):
    """Issue 48 item 5 (fails on the old code, which chose ubuntu-24_04-lts server-gen1, a generation 1 image,
    from the recorded list: every current size of a Gen2-only series would then never get a node)."""
    chosen = images.choose_image(None, _recorded(), TODAY, generations=generations, vm_size='Standard_D2ds_v6')
    assert chosen.image_reference == {'publisher': 'canonical', 'offer': 'ubuntu-24_04-lts', 'sku': 'server',
                                      'version': 'latest'}
    assert 'Generation2VMImage' in chosen.capabilities and chosen.node_agent_sku_id == 'batch.node.ubuntu 24.04'


def test_a_generation_1_only_size_gets_a_generation_1_default_image():
    chosen = images.choose_image(None, _recorded(), TODAY, generations=frozenset({'V1'}), vm_size='Standard_D1_v2')
    assert images.generation(next(i for i in _recorded() if i['imageReference'] == dict(
        chosen.image_reference))) == 'V1'
    with pytest.raises(Refusal, match='no current Ubuntu image of Hyper-V generation 1'):
        images.choose_image(None, [i for i in _recorded() if images.generation(i) == 'V2'], TODAY,
                            generations=frozenset({'V1'}), vm_size='Standard_D1_v2')


@pytest.mark.parametrize('size', ['Standard_NC4as_T4_v3', 'Standard_NC24ads_A100_v4'])
def test_gpu_sizes_get_the_hpc_image_with_drivers_of_their_generation(size):
    chosen = images.choose_image(None, _recorded(), TODAY, gpu=True, generations=_size_generations(size),
                                 vm_size=size)
    assert chosen.image_reference['publisher'] == 'microsoft-dsvm' and chosen.image_reference['sku'] == '2204'
    assert 'Generation2VMImage' in chosen.capabilities


@pytest.mark.parametrize('sku, size, refused', [
    ('22_04-lts', 'Standard_NC24ads_A100_v4', True), ('22_04-lts-gen2', 'Standard_NC24ads_A100_v4', False),
    ('22_04-lts', 'Standard_NC4as_T4_v3', False), ('22_04-lts-gen2', 'Standard_NC4as_T4_v3', False),
    ('22_04-lts', 'Standard_D2ds_v6', True), ('22_04-lts', 'Standard_D2s_v3', False),
])
def test_a_given_image_of_a_generation_the_size_does_not_boot_is_refused(sku, size, refused):
    """Issue 40 item 3 (fails on the old code, which took any listed image: Batch's allocation fails later)."""
    ref = {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': sku}
    call = lambda: images.choose_image(ref, _recorded(), TODAY, generations=_size_generations(size),  # noqa: E731
                                       vm_size=size)
    if not refused:
        assert call().image_reference['sku'] == sku
        return
    with pytest.raises(Refusal) as refusal:
        call()
    assert refusal.value.code == 'ImageGenerationMismatch'
    assert ("Image canonical/0001-com-ubuntu-server-jammy/22_04-lts is a Hyper-V generation 1 image, but vmSize "
            "'{}' boots only generation 2".format(size)) in refusal.value.reason
    assert 'canonical/0001-com-ubuntu-server-jammy/22_04-lts-gen2' in refusal.value.reason
