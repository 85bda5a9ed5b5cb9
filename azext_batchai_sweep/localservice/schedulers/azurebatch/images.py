"""A cluster's image as a Batch image and node agent, from the account's supported-image list only.

Batch needs a node agent SKU per image, and it retires both (Azure/Batch issues #169 #174 #180 #200): a hard-coded
pair breaks the day it retires. So the image and its `nodeAgentSKUId` always come from the account's
`supportedimages` answer (data plane `ImageInformation`: `nodeAgentSKUId`, `imageReference`, `osType`,
`capabilities`, `batchSupportEndOfLife`, `verificationType`): an image past its end of life is refused, one within
NEAR_END_OF_LIFE of it is taken with a warning.

Batch AI's default image (`microsoft-dsvm/amlcompute/runtime-gen1-ubuntu18`, an image Batch never offered) or no
image -> the best current Linux image of the list: for GPU sizes an HPC image with the NVIDIA drivers
(microsoft-dsvm ubuntu-hpc) first, then Canonical's Ubuntu; verified before unverified; the latest end of life
first. A user-given image must be in the list (publisher, offer and sku); its version is kept ('latest' if none).

Hyper-V generation: an image of the list is generation 2 when its capabilities say `Generation2VMImage`, else
generation 1 (the recorded list pairs them: `22_04-lts` and `22_04-lts-gen2`). A node boots only an image of a
generation its size lists (`HyperVGenerations` of the offered size, vm_sizes.hyperv_generations): a mismatch is
refused here, at `cluster create`, rather than by Batch's allocation minutes later. The default choice takes a
generation-2 image first (sizes of the current generations boot only those; the older ones boot both).
"""
import datetime
import re
from typing import NamedTuple

from .errors import Refusal
from .spelling import same

NEAR_END_OF_LIFE = datetime.timedelta(days=90)
BATCHAI_DEFAULT_IMAGE = ('microsoft-dsvm', 'amlcompute')
# Publisher/offer patterns of the default choice, best first.
GPU_PREFERENCE = [('microsoft-dsvm', r'ubuntu-hpc'), ('canonical', r'ubuntu'), ('microsoft-azure-batch', r'ubuntu')]
CPU_PREFERENCE = [('canonical', r'ubuntu'), ('microsoft-azure-batch', r'ubuntu'), ('microsoft-dsvm', r'ubuntu-hpc')]
GENERATION_2 = 'generation2vmimage'  # the supported-image capability of a Hyper-V generation 2 image
# A cluster of more than one node runs multi-node jobs, whose processes on the other nodes start through mpirun
# (node_wrapper.mpi_spawn, and the MPI toolkits): its default image is one of Azure's HPC images, which ship MPI
# (HPC-X, Open MPI), first; the plain Ubuntu images have none.
MPI_PREFERENCE = [('microsoft-dsvm', r'ubuntu-hpc'), ('almalinux', r'almalinux-hpc')]
_MPI_OFFER = re.compile(r'(^|-)hpc($|-)')


def has_mpi(image_reference):
    """The image ships MPI: one of Azure's HPC images (offer ubuntu-hpc, almalinux-hpc...)."""
    return bool(_MPI_OFFER.search(_key(image_reference)[1]))


class ChosenImage(NamedTuple):
    image_reference: dict  # Batch ImageReference JSON
    node_agent_sku_id: str
    warnings: list  # sentences for the user (near end of life)
    capabilities: list  # the image's Batch capabilities ('DockerCompatible', 'NvidiaTeslaDriverInstalled'...)


def _end_of_life(image):
    text = image.get('batchSupportEndOfLife')
    return datetime.date.fromisoformat(str(text)[:10]) if text else None


def _key(ref):
    return tuple(str((ref or {}).get(k) or '').lower() for k in ('publisher', 'offer', 'sku'))


def _describe(ref):
    return '/'.join(str(ref.get(k)) for k in ('publisher', 'offer', 'sku'))


def _chosen(image, version, today):
    ref = {k: image['imageReference'][k] for k in ('publisher', 'offer', 'sku')}
    ref['version'] = version or 'latest'
    warnings = []
    end = _end_of_life(image)
    if end is not None and end - today <= NEAR_END_OF_LIFE:
        warnings.append('Image {} (node agent {}) reaches its Batch end of life on {}: pools keep running, but new '
                        'nodes cannot be created after it. Recreate the cluster with a newer image before then.'.format(
                            _describe(ref), image['nodeAgentSKUId'], end.isoformat()))
    return ChosenImage(ref, image['nodeAgentSKUId'], warnings, list(image.get('capabilities') or []))


def generation(image):
    """'V2' for a supported image of Hyper-V generation 2 (capability Generation2VMImage), else 'V1'."""
    return 'V2' if GENERATION_2 in [str(c).lower() for c in image.get('capabilities') or []] else 'V1'


def _release(image):
    """An image's OS release as numbers, from its node agent ('batch.node.ubuntu 22.04' -> (22, 4)): the offer and
    sku name it in several ways ('0001-com-ubuntu-server-jammy' '22_04-lts', 'ubuntu-24_04-lts' 'server')."""
    return tuple(int(n) for n in re.findall(r'\d+', str(image.get('nodeAgentSKUId') or '')))


def _generations_text(generations):
    return ' and '.join(sorted(g.replace('V', '') for g in generations))


def _current(images, today):
    return [i for i in images if _end_of_life(i) is None or _end_of_life(i) > today]


def _is_default(ref):
    return not ref or (not ref.get('virtualMachineImageId') and _key(ref)[:2] == BATCHAI_DEFAULT_IMAGE)


def choose_image(image_reference, supported_images, today, gpu=False, generations=None, vm_size=None, mpi=False):
    """The ChosenImage for a cluster's Batch AI `imageReference` (None: Batch AI's default) from the account's
    supported images on the date `today`; Refusal for an image Batch does not support or no longer supports, or
    one of a Hyper-V generation the size does not boot. `gpu`: the size has GPUs (an image with NVIDIA drivers
    first); `generations`: the size's Hyper-V generations (vm_sizes.hyperv_generations; None: not known);
    `vm_size`: its name, for the refusal; `mpi`: the cluster may run multi-node jobs: the default is an image with
    MPI where the account offers one."""
    ref = image_reference or {}
    linux = [i for i in supported_images or [] if same(i.get('osType', 'linux'), 'linux')]
    if ref.get('virtualMachineImageId'):
        raise Refusal('virtualMachineConfiguration.imageReference.virtualMachineImageId (a custom image) is not '
                      'supported on Azure Batch here: its node agent cannot be taken from the supported-image list. '
                      'Use a marketplace image from: az batch pool supported-images list.', code='UnsupportedImage')
    if _is_default(ref):
        current = [i for i in _current(linux, today) if not generations or generation(i) in generations]
        for publisher, offer in (MPI_PREFERENCE if mpi else []) + (GPU_PREFERENCE if gpu else CPU_PREFERENCE):
            matches = [i for i in current if _key(i['imageReference'])[0] == publisher
                       and re.search(offer, _key(i['imageReference'])[1])]
            if matches:
                # The newest release first (its end of life, then its node agent's version), and of one release its generation
                # 2 image (what current sizes boot): a generation 2 image of an older release is no better a default.
                matches.sort(key=lambda i: (same(i.get('verificationType'), 'verified'),
                                            _end_of_life(i) or datetime.date.max, _release(i), generation(i) == 'V2',
                                            _key(i['imageReference'])[2]), reverse=True)
                return _chosen(matches[0], None, today)
        for_size = ' of Hyper-V generation {} (what vmSize \'{}\' boots)'.format(
            _generations_text(generations), vm_size) if generations else ''
        raise Refusal('The Batch account supports no current Ubuntu image{} for the default image: give '
                      'virtualMachineConfiguration.imageReference from: az batch pool supported-images list.'.format(
                          for_size), code='UnsupportedImage')
    matches = [i for i in linux if _key(i['imageReference']) == _key(ref)]
    if not matches:
        offers = sorted({_describe(i['imageReference']) for i in _current(linux, today)
                         if _key(i['imageReference'])[0] == _key(ref)[0]})[:6]
        raise Refusal('Image {} is not supported by Azure Batch (not in the account\'s supported-image list){}. See: '
                      'az batch pool supported-images list.'.format(
                          _describe(ref), ' (this publisher\'s supported images: {})'.format(', '.join(offers))
                          if offers else ''), code='UnsupportedImage')
    current = _current(matches, today)
    if not current:
        end = _end_of_life(matches[0])
        raise Refusal('Image {} (node agent {}) reached its Batch end of life on {}: new nodes cannot be created '
                      'from it. Choose a current image from: az batch pool supported-images list.'.format(
                          _describe(ref), matches[0]['nodeAgentSKUId'], end.isoformat()), code='ImageEndOfLife')
    current.sort(key=lambda i: _end_of_life(i) or datetime.date.max, reverse=True)
    if generations and generation(current[0]) not in generations:
        others = sorted(_describe(i['imageReference']) for i in _current(linux, today)
                        if _key(i['imageReference'])[:2] == _key(ref)[:2] and generation(i) in generations)
        raise Refusal("Image {} is a Hyper-V generation {} image, but vmSize '{}' boots only generation {}: Batch "
                      'could never start a node of it. Use a generation {} image{}, or another size.'.format(
                          _describe(ref), generation(current[0])[1:], vm_size, _generations_text(generations),
                          _generations_text(generations), ' (of this offer: {})'.format(', '.join(others[:4]))
                          if others else ''), code='ImageGenerationMismatch')
    return _chosen(current[0], ref.get('version'), today)
