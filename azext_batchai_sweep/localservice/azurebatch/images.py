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
"""
import datetime
import re
from typing import NamedTuple

from .errors import Refusal

NEAR_END_OF_LIFE = datetime.timedelta(days=90)
BATCHAI_DEFAULT_IMAGE = ('microsoft-dsvm', 'amlcompute')
# Publisher/offer patterns of the default choice, best first.
GPU_PREFERENCE = [('microsoft-dsvm', r'ubuntu-hpc'), ('canonical', r'ubuntu'), ('microsoft-azure-batch', r'ubuntu')]
CPU_PREFERENCE = [('canonical', r'ubuntu'), ('microsoft-azure-batch', r'ubuntu'), ('microsoft-dsvm', r'ubuntu-hpc')]
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


def _current(images, today):
    return [i for i in images if _end_of_life(i) is None or _end_of_life(i) > today]


def _is_default(ref):
    return not ref or (not ref.get('virtualMachineImageId') and _key(ref)[:2] == BATCHAI_DEFAULT_IMAGE)


def choose_image(image_reference, supported_images, today, gpu=False, mpi=False):
    """The ChosenImage for a cluster's Batch AI `imageReference` (None: Batch AI's default) from the account's
    supported images on the date `today`; Refusal for an image Batch does not support or no longer supports.
    `mpi`: the cluster may run multi-node jobs: the default is an image with MPI where the account offers one."""
    ref = image_reference or {}
    linux = [i for i in supported_images or [] if str(i.get('osType', 'linux')).lower() == 'linux']
    if ref.get('virtualMachineImageId'):
        raise Refusal('virtualMachineConfiguration.imageReference.virtualMachineImageId (a custom image) is not '
                      'supported on Azure Batch here: its node agent cannot be taken from the supported-image list. '
                      'Use a marketplace image from: az batch pool supported-images list.', code='UnsupportedImage')
    if _is_default(ref):
        current = _current(linux, today)
        for publisher, offer in (MPI_PREFERENCE if mpi else []) + (GPU_PREFERENCE if gpu else CPU_PREFERENCE):
            matches = [i for i in current if _key(i['imageReference'])[0] == publisher
                       and re.search(offer, _key(i['imageReference'])[1])]
            if matches:
                matches.sort(key=lambda i: (str(i.get('verificationType', '')).lower() == 'verified',
                                            _end_of_life(i) or datetime.date.max, _key(i['imageReference'])[2]),
                             reverse=True)
                return _chosen(matches[0], None, today)
        raise Refusal('The Batch account supports no current Ubuntu image for the default image: give '
                      'virtualMachineConfiguration.imageReference from: az batch pool supported-images list.',
                      code='UnsupportedImage')
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
    return _chosen(current[0], ref.get('version'), today)
