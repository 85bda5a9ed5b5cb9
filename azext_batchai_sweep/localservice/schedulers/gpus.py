"""GPUs: how many a Batch AI VM size has, and which devices of this machine the processes scheduler hands out.

Batch AI gave a job every GPU of each of its nodes, so a job's GPUs per node follow its cluster's VM size: the
N-series sizes of Batch AI's time (NC/NCv2/NCv3 K80/P100/V100, ND P40/ND40 V100, NV M60) have 1, 2 or 4 GPUs as
they have 6, 12 or 24 cores (ND40: 8). Any other size has none. The local default cluster ('LOCAL') has one GPU
per node when the service manages GPUs (`--gpus`), none otherwise.
"""
import re
import shutil
import subprocess

LOCAL_VM_SIZE = 'LOCAL'
_GPU_SIZE = re.compile(r'^(?:standard_)?(nc|nd|nv)(\d+)', re.IGNORECASE)
_GPUS_BY_CORES = {6: 1, 12: 2, 24: 4, 40: 8}


def gpus_per_node(vm_size, local_gpus=0):
    """The GPUs of one node of `vm_size` (NC6=1, NC12=2, NC24=4, ND40=8...; 0 for sizes without GPUs)."""
    if (vm_size or '').upper() == LOCAL_VM_SIZE:
        return 1 if local_gpus else 0
    match = _GPU_SIZE.match(vm_size or '')
    if not match:
        return 0
    return _GPUS_BY_CORES.get(int(match.group(2)), 0)


def parse_gpus(spec, smi='nvidia-smi'):
    """The device indexes of `--gpus`: 'auto' (what `nvidia-smi -L` lists; none without it), N, or a list."""
    text = (spec or '').strip().lower()
    if text == 'auto':
        return detect(smi)
    if text.isdigit():
        return [str(i) for i in range(int(text))]
    devices = [d.strip() for d in text.split(',') if d.strip()]
    if not devices or any(not d.isdigit() for d in devices) or len(set(devices)) != len(devices):
        raise ValueError("--gpus takes 'auto', a count or a comma-separated list of distinct device indexes, "
                         "not {!r}".format(spec))
    return devices


def detect(smi='nvidia-smi'):
    """The GPU indexes `nvidia-smi -L` lists ('GPU 0: ...'); [] when it is missing or fails."""
    path = shutil.which(smi)
    if path is None:
        return []
    try:
        listing = subprocess.run([path, '-L'], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return re.findall(r'^GPU (\d+):', listing, re.MULTILINE)
