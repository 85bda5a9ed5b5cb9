"""docs/recipes.md says what a `nodeCount: 2` job does on the local service as the launcher does it (issue 42, item
10): the Batch AI recipes' CNTK jobs run the script twice (one mpirun rank per node), a custom toolkit once. The
launches themselves run through az in tests/launch_jobs.py (a 2-node customMpi job: both ranks write stdout.txt)."""
import os

from azext_batchai_sweep.localservice.schedulers import launcher
from tests.fixtures_az import REPO_ROOT

NODES = [launcher.Node('node-0', '10.0.0.4'), launcher.Node('node-1', '10.0.0.5')]


def _text():
    with open(os.path.join(REPO_ROOT, 'docs', 'recipes.md'), encoding='utf-8') as f:
        return ' '.join(f.read().split())


def test_recipes_doc_says_an_mpi_toolkit_runs_twice_on_two_nodes_as_the_launcher_does():
    text = _text()
    assert 'runs the script once (no MPI)' not in text
    assert 'an MPI toolkit (CNTK, Horovod, Chainer, custom MPI) runs the script twice (`mpirun -np 2`' in text
    assert 'a custom toolkit once' in text
    cntk = launcher.plan({'nodeCount': 2, 'cntkSettings': {'pythonScriptFilePath': 'train.py'}}, 'cntkSettings',
                         NODES, '/wd/hostfile', '/shared')
    assert '-np 2' in ' '.join(p.command for p in cntk.processes)
    custom = launcher.plan({'nodeCount': 2, 'customToolkitSettings': {'commandLine': 'python train.py'}},
                           'customToolkitSettings', NODES, '/wd/hostfile', '/shared')
    assert [p.command for p in custom.processes] == ['python train.py']
