"""The Batch AI recipe's `az batchai` sequence (tests/packaging/recipes/, ending with `cluster resize ... -t 0`) runs
verbatim on the Slurm scheduler: the real az with the extension (dev sources), `az batchai sweep local start
--scheduler slurm` against the session's real Slurm, every line as written (what tests/packaging/
test_batchai_recipes.py runs on the processes scheduler through the installed wheel)."""
import json
import os
import re
import shlex
import shutil

import pytest

from tests.fixtures_az import AzRunner
from tests.localservice.test_job_launch import need_mpirun
from tests.packaging.test_batchai_recipes import ACCOUNT, ARM_ONLY, RECIPES, USING, recipe_lines

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_the_recipe_runs_verbatim_on_slurm_to_its_final_resize(slurm_cluster, idle_cluster, tmp_path):
    need_mpirun()  # the recipe's job is a 2-node Chainer job: mpirun over its Slurm allocation
    home, work = tmp_path / 'home', tmp_path / 'work'
    home.mkdir()
    work.mkdir()
    az = AzRunner(str(tmp_path / 'config'), env={'HOME': str(home)}, cwd=str(work))
    data_dir = str(tmp_path / 'service')
    started = az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--scheduler', 'slurm',
                 '--slurm-conf', slurm_cluster.conf, '-o', 'json')
    assert started.exit_code == 0, started.stderr
    endpoint = started.json()['endpoint']
    results = {}
    try:
        hint = re.search(r'export AZURE_STORAGE_CONNECTION_STRING="\$\(az (.*?)\)"', started.stderr)
        assert hint, started.stderr
        shown = az(*shlex.split(hint.group(1).replace('<storage account name>', ACCOUNT)))
        assert shown.exit_code == 0, shown.stderr
        az.env['AZURE_STORAGE_CONNECTION_STRING'] = shown.stdout.strip()
        for line in recipe_lines('chainer_gpu_distributed.txt'):
            if line.startswith('cd '):
                continue  # Cloud Shell only
            if line.startswith('wget '):
                name = os.path.basename(line.split()[-1]) if '-O' not in line else line.split()[2]
                shutil.copy(os.path.join(RECIPES, name), str(work / name))
                continue
            words = shlex.split(line.replace('<storage account name>', ACCOUNT))
            results[line] = az(*words[1:])
    finally:
        stopped = az('batchai', 'sweep', 'local', 'stop', '--data-dir', data_dir)
        assert stopped.exit_code == 0, stopped.stderr

    for line, result in results.items():
        assert 'Traceback' not in result.stderr, (line, result.stderr)
        if line.startswith('az batchai'):
            assert result.exit_code == 0, (line, result.stderr)
            assert set(USING.findall(result.stderr)) == {endpoint}, (line, result.stderr)
        elif line.startswith(ARM_ONLY):
            assert result.exit_code == 1 and "Please run 'az login'" in result.stderr, (line, result.stderr)
    (streamed,) = [r for line, r in results.items() if line.startswith('az batchai job file stream')]
    assert len(re.findall(r'^\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$', streamed.stdout, re.M)) == 3, \
        streamed.stdout
    (resized,) = [r for line, r in results.items() if line.startswith('az batchai cluster resize')]
    resized = json.loads(resized.stdout)
    assert (resized['name'], resized['scaleSettings']['manual']['targetNodeCount'], resized['currentNodeCount'],
            resized['allocationState']) == ('nc6', 0, 0, 'steady')
