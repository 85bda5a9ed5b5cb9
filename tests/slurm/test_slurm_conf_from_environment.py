"""The cluster a Slurm service submits to is the one it talks to, however the user named it.

Sites with environment modules, a non-default prefix or several clusters set SLURM_CONF in the shell and start
`local start --scheduler slurm` without `--slurm-conf`. Every other Slurm test passes `--slurm-conf`; this one
starts the service the user's way (SLURM_CONF only in the environment; this machine has no /etc/slurm/slurm.conf
of its own, so a command without the configuration fails), through the real az, with one job on its own and three
as a job array (the gate of test_slurm_arrays decides they are queued together), each job also carrying a
SLURM_CONF and an SBATCH_* variable of its own that must not steer the service's sbatch. Each Batch AI job is then
found with Slurm's own tools from the id `status -o json` and the report give it, and back.
"""
import json
import os

import pytest

from azext_batchai_sweep.localservice import control
from azext_batchai_sweep.localservice.schedulers.slurm.commands import SlurmCli, resolve_conf
from tests.fixtures_az import AzRunner
from tests.slurm.test_slurm_arrays import Gate

pytestmark = [pytest.mark.az, pytest.mark.service]

# Each job says which Slurm job (or array task) ran it, and reports a metric for the report.
COMMAND = 'echo "slurm=${SLURM_ARRAY_TASK_ID:+${SLURM_ARRAY_JOB_ID}_}${SLURM_ARRAY_TASK_ID:-$SLURM_JOB_ID} x={{X}}"'


def write_sweep(directory, name, values):
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
           'customToolkitSettings': {'commandLine': COMMAND},
           # The job's own variables: a cluster configuration that does not exist and a partition that does not.
           'environmentVariables': [{'name': 'SLURM_CONF', 'value': '/nonexistent/slurm.conf'},
                                    {'name': 'SBATCH_PARTITION', 'value': 'nope'}]}
    path = os.path.join(directory, name + '.yaml')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: {}\nparameters:\n  - {{name: X, type: discrete, values: {}}}\njob: {}\n'.format(
            name, json.dumps(values), json.dumps(job)))
    return path


def test_slurm_conf_from_the_environment_alone_and_in_an_array(slurm_cluster, tmp_path):
    slurm_cluster.wait_idle()
    assert not os.path.exists('/etc/slurm/slurm.conf'), 'this test needs Slurm without a default configuration'
    gate = Gate(str(tmp_path))
    config = tmp_path / 'azure-config'
    config.mkdir()
    az = AzRunner(str(config), cwd=str(tmp_path),
                  env={'SLURM_CONF': slurm_cluster.conf, 'PATH': gate.dir + os.pathsep + os.environ['PATH']})
    data_dir = str(tmp_path / 'local')
    try:
        started = az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--scheduler', 'slurm', '-o', 'json')
        assert started.exit_code == 0, started.stderr
        info = started.json()
        assert info['slurmConf'] == slurm_cluster.conf and info['slurmCluster'] == 'testcluster'
        assert slurm_cluster.conf in started.stderr
        shown = az('batchai', 'sweep', 'local', 'status', '-o', 'json')
        assert shown.exit_code == 0 and shown.json()['slurmConf'] == slurm_cluster.conf

        target = ['-g', info['resourceGroup'], '-w', info['workspace'], '-e', 'fromenv']
        write_sweep(str(tmp_path), 'single', [7])
        write_sweep(str(tmp_path), 'trio', [1, 2, 3])
        for name in ('single', 'trio'):  # the first sbatch waits at the gate: the trio is queued meanwhile
            submitted = az('batchai', 'sweep', 'submit', *target, '-n', name, '--spec', name + '.yaml',
                           '-c', info['cluster'], '-o', 'json')
            assert submitted.exit_code == 0, submitted.stderr
        gate.open()
        ids = {}
        for name, count in (('single', 1), ('trio', 3)):
            waited = az('batchai', 'sweep', 'status', *target, '-n', name, '--wait', '--interval', '0.5',
                        '-o', 'json')
            assert waited.exit_code == 0, waited.stderr + waited.stdout
            rows = waited.json()['jobs']
            assert len(rows) == count and {row['state'] for row in rows} == {'succeeded'}, rows
            for row in rows:
                tail = az('batchai', 'sweep', 'status', *target, '-n', name, '--job', row['name'], '--tail', '5',
                          '-o', 'tsv')
                printed = dict(word.split('=', 1) for word in tail.stdout.split() if '=' in word)
                # The id status gives is the one Slurm ran the job under.
                assert row['schedulerJobId'] == printed['slurm'], (row, tail.stdout)
                ids[row['name']] = row['schedulerJobId']
        calls = gate.calls()
        assert len(calls) == 2 and '--array' not in calls[0] and '--array=0-2' in calls[1], calls
        (single,) = [ids[n] for n in ids if n.startswith('single')]
        trio = sorted(ids[n] for n in ids if n.startswith('trio'))
        assert single.isdigit()
        array = trio[0].split('_')[0]
        assert trio == ['{}_{}'.format(array, task) for task in range(3)]

        # From Slurm back to the Batch AI job: squeue names the job after the service's marker (an array after its
        # token), as docs/slurm.md says.
        for job_id in [single, trio[0]]:
            named = slurm_cluster.run('squeue', '-h', '-r', '-t', 'all', '-j', job_id, '-o', '%j')
            assert named.stdout.strip().startswith('batchai-'), named.stdout + named.stderr

        reported = az('batchai', 'sweep', 'report', *target, '-n', 'trio', '--metric', 'x', '--goal', 'max',
                      '--output-file', str(tmp_path / 'trio.html'), '-o', 'json')
        assert reported.exit_code == 0, reported.stderr
        assert sorted(job['schedulerJobId'] for job in reported.json()['jobs']) == trio
        html = (tmp_path / 'trio.html').read_text(encoding='utf-8')
        assert 'Slurm job' in html and trio[2] in html
    finally:
        gate.open()
        az('batchai', 'sweep', 'local', 'stop', '--data-dir', data_dir)
        control.stop(data_dir)


def test_one_configuration_for_every_command(tmp_path, monkeypatch):
    conf = tmp_path / 'slurm.conf'
    monkeypatch.setenv('SLURM_CONF', str(conf))
    assert resolve_conf() == str(conf)
    assert resolve_conf('other.conf') == os.path.abspath('other.conf')  # --slurm-conf wins
    assert resolve_conf(environ={}) is None  # Slurm's own default
    cli = SlurmCli()
    assert cli.conf == str(conf)
    # Whatever SLURM_CONF a base environment (a job's) carries, the command goes to the service's cluster.
    assert cli.environment({'SLURM_CONF': '/elsewhere.conf', 'A': '1'}) == {'SLURM_CONF': str(conf), 'A': '1'}
    monkeypatch.delenv('SLURM_CONF')
    default = SlurmCli()
    assert default.conf is None and 'SLURM_CONF' not in default.environment({'SLURM_CONF': '/elsewhere.conf'})

