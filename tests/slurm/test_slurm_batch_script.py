"""The Slurm batch script (mapping.batch_script) run by bash in the test's own process, as sbatch runs it on a job's
first node: its effects (the exit record, the job's output and exit code, job preparation on every node, the
job's environment from its file, the plan written for launcher.py) checked without a cluster.

Real Slurm runs the same scripts in tests/slurm/test_slurm_jobs.py and test_slurm_launch.py, but there the script
is written in the service's process, which mutation testing cannot see (docs/mutation-testing.md); here it is written
in the test's. Only the two Slurm commands the script's processes call on an allocation stand in for Slurm (no
controller here), both on PATH for bash:
- scontrol (launcher.slurm_nodes): `show hostnames LIST` a name per line, `show node --oneliner NAMES` a line of
  Field=value words per node, as the session cluster's nodes answer (tests/slurm/cluster.py: NodeAddr=127.0.0.1);
- srun: its tasks run one after the other on this machine, each with its SLURM_PROCID (Slurm starts them at once,
  one on each node), the options it was given written to a log for the test to read.
"""
import os
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from azext_batchai_sweep.localservice.schedulers.slurm import mapping

SCONTROL = r'''#!/bin/bash
case "$1 $2" in
    "show hostnames") tr ',' '\n' <<< "$3" ;;
    "show node") for name in ${4//,/ }; do
            echo "NodeName=$name Arch=x86_64 CoresPerSocket=1 CPUAlloc=1 NodeAddr=127.0.0.1 NodeHostName=localhost"
        done ;;
    *) echo "scontrol: unexpected $*" >&2; exit 2 ;;
esac
'''

SRUN = r'''#!/bin/bash
tasks=1
while [[ $1 == --* ]]; do
    [[ $1 == --ntasks=* ]] && tasks=${1#--ntasks=}
    options+="$1 "
    shift
done
echo "$options" >> "$SRUN_LOG"
rc=0
for ((task = 0; task < tasks; task++)); do
    SLURM_PROCID=$task "$@" || rc=$?
done
exit $rc
'''


def _commands(tmp_path):
    folder = tmp_path / 'slurm-bin'
    folder.mkdir()
    for name, text in (('scontrol', SCONTROL), ('srun', SRUN)):
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return str(folder)


class _Job:
    """A job's folders (with a space and a quote in their paths: the script quotes each), its script and run."""

    def __init__(self, tmp_path, props, toolkit='customToolkitSettings'):
        self.tmp_path = tmp_path
        self.props = props
        self.toolkit = toolkit
        base = tmp_path / "data dir's"
        job_dir = base / 'jobs' / 'u1'
        self.layout = SimpleNamespace(name='job-1', uid='u1', job_dir=str(job_dir), temp_dir=str(job_dir / 'tmp'),
                                      shared_dir=str(job_dir / 'shared'), host_file=str(job_dir / 'hostfile'),
                                      stdouterr_dir=str(base / 'out' / 'stdouterr'))
        for path in (self.layout.temp_dir, self.layout.shared_dir, self.layout.stdouterr_dir):
            os.makedirs(path)
        self.exit_file = str(job_dir / 'exit')
        self.srun_log = str(tmp_path / 'srun.log')
        self.bin = _commands(tmp_path)

    def script(self, env_file=None):
        settings = os.path.join(self.layout.job_dir, 'launch-settings.json')
        with open(settings, 'w', encoding='utf-8') as f:
            f.write(mapping.launch_settings(self.props, self.toolkit, self.layout))
        return mapping.batch_script(self.props, self.toolkit, self.layout, self.exit_file, settings, env_file)

    def run(self, env_file=None, nodes='n1', env=None, cwd=None):
        """bash running the script as sbatch would: in the job's temp folder (its --chdir), with the job's
        environment and the allocation's node list."""
        path = os.path.join(self.layout.job_dir, 'slurm-job.sh')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(self.script(env_file))
        environment = dict(env or {}, PATH=self.bin + ':/usr/bin:/bin', SLURM_JOB_NODELIST=nodes,
                           SRUN_LOG=self.srun_log)
        return subprocess.run(['bash', path], cwd=cwd or self.layout.temp_dir, env=environment,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)

    def record(self):
        return mapping.read_exit_file(self.exit_file)

    def output(self, name):
        path = os.path.join(self.layout.stdouterr_dir, name)
        if not os.path.exists(path):
            return None
        with open(path, encoding='utf-8') as f:
            return f.read()

    def srun_calls(self):
        if not os.path.exists(self.srun_log):
            return []
        with open(self.srun_log, encoding='utf-8') as f:
            return f.read().split()


def _custom(command, nodes=1, prep=None):
    props = {'nodeCount': nodes, 'customToolkitSettings': {'commandLine': command}}
    if prep is not None:
        props['jobPreparation'] = {'commandLine': prep}
    return props


MAIN = ('echo "main on $AZ_BATCHAI_MPI_MASTER_NODE of $AZ_BATCH_HOST_LIST, task $AZ_BATCHAI_TASK_INDEX, '
        'in $PWD, $JOB_VAR"; echo "to stderr" >&2; touch "$AZ_BATCHAI_MPI_HOST_FILE.ran"; exit $CODE')


@pytest.mark.parametrize('env_file', [None, '/d/jobs/u1/env'])
def test_the_script_is_a_bash_script_that_names_its_job(env_file):
    layout = SimpleNamespace(name='job-1', uid='u1', job_dir='/d/jobs/u1', temp_dir='/d/jobs/u1/tmp',
                             shared_dir='/d/jobs/u1/shared', host_file='/d/jobs/u1/hostfile', stdouterr_dir='/d/out')
    text = mapping.batch_script(_custom('true'), 'customToolkitSettings', layout, '/d/jobs/u1/exit', '/d/settings',
                                env_file)
    lines = text.split('\n')
    assert lines[0] == '#!/bin/bash', 'sbatch needs the interpreter line first'
    assert lines[1].startswith('# ') and 'job-1' in lines[1] and 'u1' in lines[1], 'for whoever reads the job folder'
    assert text.endswith('\n')


@pytest.mark.parametrize('code', [0, 3])
def test_a_one_process_job_runs_in_the_script_and_records_main_with_its_exit_code(tmp_path, code):
    job = _Job(tmp_path, _custom(MAIN))
    ran = job.run(env={'CODE': str(code), 'JOB_VAR': 'from sbatch'})
    # its output is the script's (sbatch's --output and --error: stdout.txt, stderr.txt)
    assert ran.stdout == 'main on n1 of n1, task 0, in {}, from sbatch\n'.format(job.layout.temp_dir)
    assert ran.stderr == 'to stderr\n', 'nothing but what the job wrote'
    assert ran.returncode == code and job.record() == ('main', code)
    # planned by launcher.py on the allocation's nodes: its host file, the plan and its variables in the job folder
    with open(job.layout.host_file, encoding='utf-8') as f:
        assert f.read() == 'n1 slots=1\n'
    assert os.path.exists(job.layout.host_file + '.ran')
    assert os.path.exists(os.path.join(job.layout.job_dir, 'launch-plan.json'))
    assert os.path.exists(os.path.join(job.layout.job_dir, 'launch-env'))
    assert job.srun_calls() == [], 'one process, no job preparation: no srun step'


def test_a_plan_that_cannot_be_made_ends_the_script_before_the_job_with_no_record(tmp_path):
    job = _Job(tmp_path, _custom(MAIN))
    os.remove(os.path.join(job.bin, 'scontrol'))  # the allocation's nodes cannot be read
    ran = job.run(env={'CODE': '0'})
    assert ran.returncode == 1 and job.record() is None
    assert not os.path.exists(job.layout.host_file + '.ran'), 'the job never ran'


def test_an_array_tasks_environment_comes_from_its_file_which_is_removed_and_it_runs_in_the_jobs_folder(tmp_path):
    job = _Job(tmp_path, _custom(MAIN))
    env_file = os.path.join(job.layout.job_dir, "env file's")
    with open(env_file, 'w', encoding='utf-8') as f:
        f.write(mapping.environment_file({'CODE': '0', 'JOB_VAR': "a value's words"}))
    array_dir = tmp_path / 'array'
    array_dir.mkdir()
    ran = job.run(env_file=env_file, cwd=str(array_dir))  # sbatch's --chdir: the array's folder
    assert ran.stdout == "main on n1 of n1, task 0, in {}, a value's words\n".format(job.layout.temp_dir)
    assert ran.returncode == 0 and job.record() == ('main', 0)
    assert not os.path.exists(env_file), 'its secrets stay on disk only until the job starts'


def test_an_array_task_whose_environment_file_is_gone_ends_before_the_job_with_no_record(tmp_path):
    job = _Job(tmp_path, _custom(MAIN))
    ran = job.run(env_file=os.path.join(job.layout.job_dir, 'gone'), env={'CODE': '0'}, cwd=str(tmp_path))
    assert ran.returncode == 1 and job.record() is None
    assert not os.path.exists(job.layout.host_file + '.ran')


PREP = 'echo "prep task ${AZ_BATCHAI_TASK_INDEX:-none} in $PWD"; echo "prep err" >&2; exit $PREP_CODE'


def test_job_preparation_runs_before_the_job_its_output_appended_to_the_job_prep_files(tmp_path):
    job = _Job(tmp_path, _custom(MAIN, prep=PREP))
    with open(os.path.join(job.layout.stdouterr_dir, 'stdout-job_prep.txt'), 'w', encoding='utf-8') as f:
        f.write('an earlier line\n')
    ran = job.run(env={'CODE': '0', 'PREP_CODE': '0', 'JOB_VAR': 'v'})
    assert ran.returncode == 0 and job.record() == ('main', 0)
    assert job.output('stdout-job_prep.txt') == 'an earlier line\nprep task 0 in {}\n'.format(job.layout.temp_dir)
    assert job.output('stderr-job_prep.txt') == 'prep err\n'
    assert ran.stdout.startswith('main on n1') and ran.stderr == 'to stderr\n', 'not in the job\'s own output'
    assert job.srun_calls() == [], 'one node: prepared in the script'


@pytest.mark.parametrize('nodes', [1, 2])
def test_a_failed_job_preparation_records_prep_with_its_code_and_the_job_never_runs(tmp_path, nodes):
    job = _Job(tmp_path, _custom(MAIN, nodes=nodes, prep=PREP))
    ran = job.run(nodes=','.join('n%d' % (i + 1) for i in range(nodes)), env={'CODE': '0', 'PREP_CODE': '4'})
    assert ran.returncode == 4 and job.record() == ('prep', 4)
    assert not os.path.exists(job.layout.host_file + '.ran') and ran.stdout == ''


@pytest.mark.parametrize('count', [2, 3])
def test_on_several_nodes_job_preparation_runs_once_on_each_node_with_its_task_index(tmp_path, count):
    job = _Job(tmp_path, _custom(MAIN, nodes=count, prep=PREP))
    names = ['n%d' % (i + 1) for i in range(count)]
    ran = job.run(nodes=','.join(names), env={'CODE': '0', 'PREP_CODE': '0', 'JOB_VAR': 'v'})
    assert ran.returncode == 0 and job.record() == ('main', 0)
    assert job.output('stdout-job_prep.txt') == ''.join('prep task {} in {}\n'.format(i, job.layout.temp_dir)
                                                        for i in range(count))
    assert job.output('stderr-job_prep.txt') == 'prep err\n' * count
    # one srun step of a task on each of the job's nodes, stopped as a whole when one fails
    assert sorted(job.srun_calls()) == sorted(['--nodes=%d' % count, '--ntasks=%d' % count, '--ntasks-per-node=1',
                                               '--kill-on-bad-exit=1'])
    # a custom toolkit's command: one process, on the first node, in the script
    assert ran.stdout == 'main on n1 of {}, task 0, in {}, v\n'.format(','.join(names), job.layout.temp_dir)
    with open(job.layout.host_file, encoding='utf-8') as f:
        assert f.read() == ''.join('{} slots=1\n'.format(name) for name in names)


PYTORCH_SCRIPT = '''import os, sys
print('rank', os.environ['AZ_BATCHAI_TASK_INDEX'], 'of', os.environ['AZ_BATCH_HOST_LIST'], sys.argv[1:])
print('rank err', os.environ['AZ_BATCHAI_TASK_INDEX'], file=sys.stderr)
sys.exit(int(os.environ['AZ_BATCHAI_TASK_INDEX']) * int(os.environ.get('FAIL', '0')))
'''


@pytest.mark.parametrize('fail, code', [(0, 0), (6, 6)])
def test_a_job_of_several_processes_is_run_by_the_launcher_each_with_its_own_output_files(tmp_path, fail, code):
    script = tmp_path / 'train.py'
    script.write_text(PYTORCH_SCRIPT)
    props = {'nodeCount': 2, 'pyTorchSettings': {'pythonScriptFilePath': str(script), 'commandLineArgs': '--x 1'}}
    job = _Job(tmp_path, props, toolkit='pyTorchSettings')
    ran = job.run(nodes='n1,n2', env={'FAIL': str(fail)})
    assert ran.returncode == code and job.record() == ('main', code)
    assert ran.stdout == '' and ran.stderr == '', 'each process writes its own files, not the script\'s'
    for rank in (0, 1):
        assert job.output('stdout-{}.txt'.format(rank)) == "rank {} of n1,n2 ['--x', '1']\n".format(rank)
        assert job.output('stderr-{}.txt'.format(rank)) == 'rank err {}\n'.format(rank)
    # the second node's process: a one-task srun step on it (the first node's runs in the script)
    assert '--nodelist=n2' in job.srun_calls() and '--nodelist=n1' not in job.srun_calls()


def test_a_one_process_job_whose_output_has_its_own_name_is_run_by_the_launcher_into_those_files(tmp_path):
    # a TensorFlow job on one node: one process, the master, whose output Batch AI named stdout-wk-0.txt
    script = tmp_path / 'train.py'
    script.write_text(PYTORCH_SCRIPT)
    props = {'nodeCount': 1, 'tensorFlowSettings': {'pythonScriptFilePath': str(script),
                                                    'masterCommandLineArgs': '--master'}}
    job = _Job(tmp_path, props, toolkit='tensorFlowSettings')
    ran = job.run()
    assert ran.returncode == 0 and job.record() == ('main', 0)
    assert ran.stdout == '' and ran.stderr == ''
    assert job.output('stdout-wk-0.txt') == "rank 0 of n1 ['--master']\n"
    assert job.output('stdout.txt') is None


@pytest.mark.skipif(not shutil.which('mpirun'), reason='OpenMPI is not installed (make test installs it)')
def test_an_mpi_job_runs_mpirun_in_the_script_over_the_jobs_host_file(tmp_path):
    # the allocation's one node is this machine by name (OpenMPI starts both ranks here, from the host file)
    props = {'nodeCount': 1, 'customMpiSettings': {'processCount': 2, 'commandLine':
                                                   'echo "rank $AZ_BATCHAI_TASK_INDEX of $OMPI_COMM_WORLD_SIZE"'}}
    job = _Job(tmp_path, props, toolkit='customMpiSettings')
    ran = job.run(nodes='localhost')
    assert ran.returncode == 0 and job.record() == ('main', 0), ran.stderr
    assert sorted(ran.stdout.splitlines()) == ['rank 0 of 2', 'rank 1 of 2']
    with open(job.layout.host_file, encoding='utf-8') as f:
        assert f.read() == 'localhost slots=2\n'


def test_a_job_whose_planned_variables_cannot_all_be_set_never_runs_and_leaves_no_record(tmp_path):
    # The plan's variables (launcher.py's launch-env, sourced by the script) must all take, or the job would run with
    # another master node than its plan's. Here the shell's startup file (BASH_ENV, read by a non-interactive bash
    # such as sbatch's) made one of them read-only: sourcing the plan fails, and the script ends there.
    job = _Job(tmp_path, _custom(MAIN))
    startup = tmp_path / 'bash_env'
    startup.write_text('readonly AZ_BATCHAI_MPI_MASTER_NODE=elsewhere\n')
    ran = job.run(env={'CODE': '0', 'JOB_VAR': 'x', 'BASH_ENV': str(startup)})
    assert ran.returncode == 1 and job.record() is None
    assert 'AZ_BATCHAI_MPI_MASTER_NODE' in ran.stderr and 'readonly' in ran.stderr
    assert ran.stdout == '' and not os.path.exists(job.layout.host_file + '.ran'), 'the job never ran'
    # without the read-only variable, the same job runs on its planned master node
    ran = job.run(env={'CODE': '0', 'JOB_VAR': 'x'})
    assert ran.returncode == 0 and job.record() == ('main', 0) and ran.stdout.startswith('main on n1 of n1')
