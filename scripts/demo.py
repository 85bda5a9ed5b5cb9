"""What `make demo` runs: a real parameter sweep on the local Batch AI service, echoing everything a person types.

The sweep is examples/demo (train.py, a small pure-Python MLP; a 3x3 grid over learning rate and hidden units).
Steps: start the local service, put train.py into its `scripts` file share, plan the sweep and create the
experiment, submit, watch with `status --wait`, show the jobs and the metrics best first, tail the best job's log,
write the sweep's HTML report, run the adaptive version of the sweep (`sweep run`, bandit early termination) and
show its decisions, write its report (.demo/moons-adaptive-report.html: the stopped jobs marked, with their
reasons), stop the service (always, even after a failure). Any failing step ends the demo with a non-zero exit code.

Nothing touches the user's ~/.azure: az runs with AZURE_CONFIG_DIR=.demo/azure-config, the service keeps its state
in .demo/data, and both start empty on every run. az is the repo venv's, loading the extension from source
(AZURE_EXTENSION_DEV_SOURCES, exported by the Makefile and defaulted here for a direct run).
"""
import os
import shlex
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_DIR = '.demo'  # relative to the repo, as the echoed commands show it
CONFIG_DIR = os.path.join(DEMO_DIR, 'azure-config')
DATA_DIR = os.path.join(DEMO_DIR, 'data')
AZ = os.path.join(os.path.dirname(sys.executable), 'az')

REPORT_FILE = os.path.join(DEMO_DIR, 'moons-report.html')
ADAPTIVE_REPORT_FILE = os.path.join(DEMO_DIR, 'moons-adaptive-report.html')
ACCOUNT = 'demostorage'
SWEEP = ['-g', 'batchai-local', '-w', 'local', '-e', 'demo', '-n', 'moons']
ADAPTIVE = ['-g', 'batchai-local', '-w', 'local', '-e', 'demo', '-n', 'moons-adaptive']


class StepFailed(Exception):
    pass


def say(text):
    print('\n' + '\n'.join('# ' + line for line in text.splitlines()), flush=True)


def echo(command):
    print('$ ' + command, flush=True)


def az_environment():
    # Inherited Azure settings (an endpoint override, another config dir) would point the demo elsewhere.
    env = {k: v for k, v in os.environ.items() if not k.startswith(('AZURE_', 'AZ_BATCHAI'))}
    env.update({
        'AZURE_CONFIG_DIR': os.path.join(REPO, CONFIG_DIR),
        'AZURE_EXTENSION_DEV_SOURCES': os.environ.get('AZURE_EXTENSION_DEV_SOURCES',
                                                      os.path.join(REPO, '.venv', 'az-dev')),
        # A fresh config dir would otherwise ask about telemetry and surveys in the middle of the tour.
        'AZURE_CORE_COLLECT_TELEMETRY': 'no',
        'AZURE_CORE_SURVEY_MESSAGE': 'false',
        'AZURE_CORE_NO_COLOR': 'true',
    })
    return env


class Az:
    """Runs `az` as the user would type it, echoed first; a failure ends the tour (StepFailed)."""

    def __init__(self):
        self.env = az_environment()

    def __call__(self, *args, capture=False, shown=None):
        echo(shown or ' '.join(['az', *(shlex.quote(a) for a in args)]))
        proc = subprocess.run([AZ, *args], cwd=REPO, env=self.env, check=False, text=True,
                              stdout=subprocess.PIPE if capture else None)
        if proc.returncode != 0:
            raise StepFailed('`az {}` exited with code {}'.format(' '.join(args), proc.returncode))
        return proc.stdout


def reset_demo_dirs():
    """Start from nothing: stop a service an interrupted run left behind, then remove the demo's state."""
    sys.path.insert(0, REPO)
    from azext_batchai_sweep.localservice import control  # pylint: disable=import-outside-toplevel
    control.stop(os.path.join(REPO, DATA_DIR))
    shutil.rmtree(os.path.join(REPO, DEMO_DIR), ignore_errors=True)


def copy_script():
    share_dir = os.path.join(DATA_DIR, 'storage', ACCOUNT, 'shares', 'scripts', 'moons')
    echo('mkdir -p ' + share_dir)
    os.makedirs(os.path.join(REPO, share_dir), exist_ok=True)
    echo('cp examples/demo/train.py ' + share_dir + '/')
    shutil.copy(os.path.join(REPO, 'examples', 'demo', 'train.py'), os.path.join(REPO, share_dir))


def tour(az):
    say('A private az config dir: the demo never touches ~/.azure.')
    echo('export AZURE_CONFIG_DIR={}'.format(CONFIG_DIR))

    say('Start the local Batch AI service (workspace "local", cluster "local" with one node per CPU).\n'
        'It becomes the target of every `az batchai sweep` command until `local stop`.')
    az('batchai', 'sweep', 'local', 'start', '--data-dir', DATA_DIR)

    say('The jobs run $AZ_BATCHAI_JOB_MOUNT_ROOT/scripts/moons/train.py from the file share "scripts" of storage\n'
        'account "{0}". A local share is a directory: copy the script in (on Azure: az storage file upload).'
        .format(ACCOUNT))
    copy_script()

    say('Plan the 3 x 3 grid of examples/demo/sweep.yaml (learning rate x hidden units) on cluster "local";\n'
        'this also creates the experiment. One row per job, one column per parameter.')
    az('batchai', 'sweep', 'create', *SWEEP, '--spec', 'examples/demo/sweep.yaml', '-c', 'local',
       '--storage-account-name', ACCOUNT, '--plan-file', os.path.join(DEMO_DIR, 'moons.plan.jsonl'), '-o', 'table')

    say('Submit the planned jobs (re-running it submits only what is missing).')
    az('batchai', 'sweep', 'submit', *SWEEP, '--plan-file', os.path.join(DEMO_DIR, 'moons.plan.jsonl'),
       '-o', 'table')

    say('Watch the sweep until every job has finished.')
    az('batchai', 'sweep', 'status', *SWEEP, '--wait', '--interval', '1', '--query', 'counts', '-o', 'table')
    az('batchai', 'sweep', 'status', *SWEEP, '-o', 'table')

    say('Rank the jobs by the last val_accuracy each printed (train.py prints epoch=N ... val_accuracy=V).')
    az('batchai', 'sweep', 'metrics', *SWEEP, '--metric', 'val_accuracy', '--goal', 'max', '-o', 'table')

    say("The best job's name, and the end of its log.")
    args = ('batchai', 'sweep', 'metrics', *SWEEP, '--metric', 'val_accuracy', '--goal', 'max', '--top', '1',
            '--query', '[0].name', '-o', 'tsv')
    best = az(*args, capture=True, shown='best=$(az {})'.format(' '.join(shlex.quote(a) for a in args))).strip()
    if not best:
        raise StepFailed('metrics found no best job')
    print('best={}'.format(best))
    az('batchai', 'sweep', 'status', *SWEEP, '--job', best, '--tail', '5', '-o', 'tsv',
       shown='az batchai sweep status {} --job "$best" --tail 5 -o tsv'.format(' '.join(SWEEP)))

    say('The report: one HTML file, nothing fetched when it opens. Learning curves (every val_accuracy a job\n'
        'printed, by epoch), parallel coordinates, val_accuracy against each parameter, the best so far and the\n'
        'sortable job table. Open it in a browser (or add --open).')
    az('batchai', 'sweep', 'report', *SWEEP, '--metric', 'val_accuracy', '--plan-file',
       os.path.join(DEMO_DIR, 'moons.plan.jsonl'), '--output-file', REPORT_FILE, '-o', 'table')

    say('The same grid steered by its results (examples/demo/adaptive.yaml): `sweep run` keeps 3 jobs running,\n'
        'reads each job\'s new log lines, and terminates a job that falls behind the best by more than 15% after\n'
        'its 5th epoch (bandit). Every decision is printed with its numbers; if this command is interrupted, running\n'
        'it again resumes the sweep without duplicating a job.')
    az('batchai', 'sweep', 'run', *ADAPTIVE, '--spec', 'examples/demo/adaptive.yaml', '-c', 'local',
       '--storage-account-name', ACCOUNT, '--poll-interval', '0.5', '-o', 'table')
    say('Each job with its val_accuracy (the value it is ranked by), its best and the decision taken about it.')
    az('batchai', 'sweep', 'status', *ADAPTIVE, '--query', 'jobs[].{name: name, state: state, epoch: tuning.step, '
       'val_accuracy: tuning.latest, best: tuning.best, decision: tuning.reason}', '-o', 'table')

    say('The adaptive sweep\'s report: the stopped jobs\' curves end with a cross at the epoch bandit stopped them,\n'
        'with the rule and the numbers on hover and in the table, and the compute the stops saved. Its objective\n'
        '(val_accuracy, max, by epoch) comes from the sweep file `sweep run` ran. Open it in a browser.')
    az('batchai', 'sweep', 'report', *ADAPTIVE, '--output-file', ADAPTIVE_REPORT_FILE, '-o', 'table')


def main():
    os.chdir(REPO)
    reset_demo_dirs()
    az = Az()
    failure = None
    try:
        tour(az)
    except StepFailed as ex:
        failure = ex
    finally:
        say('Stop the service (its jobs, logs and shares stay in {} until the next demo).'.format(DATA_DIR))
        try:
            az('batchai', 'sweep', 'local', 'stop', '--data-dir', DATA_DIR)
        except StepFailed as ex:
            failure = failure or ex
    if failure is not None:
        print('\ndemo failed: {}'.format(failure), file=sys.stderr)
        return 1
    print('\n# Done. Everything above works the same against Azure: see "Running on Azure" in README.md.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
