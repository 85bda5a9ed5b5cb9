# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
# pylint: disable=line-too-long
from argcomplete.completers import FilesCompleter
from azure.cli.core.commands.parameters import get_enum_type, resource_group_name_type

from ._durations import minutes, seconds
from ._validators import (validate_local_connection_string, validate_local_start, validate_sweep_create,
                          validate_sweep_delete, validate_sweep_metrics, validate_sweep_report, validate_sweep_resubmit,
                          validate_sweep_run, validate_sweep_status, validate_sweep_stop, validate_sweep_submit,
                          validate_sweep_target)

DEFAULT_MAX_JOBS = 10000
DEFAULT_PARALLEL = 8
DEFAULT_MAX_RETRIES = 12
DEFAULT_INTERVAL = 10
DEFAULT_TAIL = 50
DEFAULT_POLL_INTERVAL = 5.0
REPORT_INTERVAL = 10


def _in_seconds(number):
    """A duration option's default as its help shows it, with its unit ("Default: 10s", not "Default: 10"); argparse
    reads it with the option's type, as a value typed on the command line."""
    return '{:g}s'.format(number)
STATES = ['queued', 'running', 'terminating', 'succeeded', 'failed', 'terminated']


def load_arguments(self, _):

    with self.argument_context('batchai sweep') as c:
        c.argument('resource_group', resource_group_name_type)
        c.argument('workspace_name', options_list=['--workspace', '-w'], configured_default='batchai_workspace',
                   help='Name of the Batch AI workspace. You can configure the default using `az configure --defaults batchai_workspace=<name>`.')
        c.argument('experiment_name', options_list=['--experiment', '-e'], configured_default='batchai_experiment',
                   help='Name of the experiment the jobs belong to. You can configure the default using `az configure --defaults batchai_experiment=<name>`.')
        c.argument('sweep_name', options_list=['--name', '-n'],
                   help='Name of the sweep: letters, digits, "-" and "_". It names the default plan file and is set in every job as BATCHAI_SWEEP_NAME.')

    for command in ('create', 'submit', 'run'):
        with self.argument_context('batchai sweep ' + command) as c:
            c.argument('spec', options_list=['--spec'], completer=FilesCompleter(),
                       help='Path of the sweep file (YAML or JSON): jobNamePrefix, sampling, parameters and the job.')
            c.argument('template', options_list=['--template'], completer=FilesCompleter(),
                       help='Path of a job.json to use as the job template, instead of the "job" of the sweep file.')
            c.argument('cluster', options_list=['--cluster', '-c'],
                       help='Name or ARM ID of the cluster to run the jobs on; fills the job\'s cluster.id. You need to provide the ARM ID if the cluster belongs to a different workspace.')
            c.argument('storage_account_name', options_list=['--storage-account-name'],
                       help='Storage account name that replaces `<AZURE_BATCHAI_STORAGE_ACCOUNT>` in the job template. Can be specified using the AZURE_BATCHAI_STORAGE_ACCOUNT environment variable.')
            c.argument('sampling', arg_type=get_enum_type(['grid', 'random']),
                       help='How to pick parameter values: every combination (grid) or --count random draws (random). Overrides the sweep file\'s sampling.type.')
            c.argument('count', type=int,
                       help='Number of jobs of a random search. Overrides the sweep file\'s sampling.count.')
            c.argument('seed', type=int,
                       help='Seed of the random draws (0 or more): the same seed plans the same jobs. Overrides the sweep file\'s sampling.seed; if neither gives one, a seed is chosen and reported.')
            c.argument('max_jobs', type=int, default=DEFAULT_MAX_JOBS,
                       help='Refuse a sweep of more jobs than this unless --yes is given.')
            c.argument('yes', options_list=['--yes', '-y'], action='store_true',
                       help='Plan the sweep even if it has more jobs than --max-jobs, and replace a plan file that holds another sweep or target.')
            c.argument('code', options_list=['--code'], completer=FilesCompleter(),
                       help='A folder sent with every job (overrides the sweep file\'s `code:`): packed once per content (leaving out .git and what .gitignore and .sweepignore ignore), uploaded to the share sweep-code of the jobs\' storage account, and unpacked into $AZ_BATCHAI_SWEEP_CODE_DIR, where the job\'s command runs (docs/code.md).')
            c.argument('code_size_limit', options_list=['--code-size-limit'], type=float,
                       help='Refuse a --code folder whose files total more than this many MiB (1 MiB = 1,048,576 bytes; default 100).')
            c.argument('allow_changes', options_list=['--allow-changes'], action='store_true',
                       help='The sweep file or template changed on purpose: replace the sweep\'s plan, and (submit) re-create its jobs whose definition changed. Without it, a re-plan that would change the sweep is refused.')

    with self.argument_context('batchai sweep create', validator=validate_sweep_create) as c:
        c.argument('plan_file', options_list=['--plan-file'], completer=FilesCompleter(),
                   help='Where to write the plan (JSON Lines). Default: `<name>.plan.jsonl` in the current directory.')
        c.argument('plan_only', options_list=['--plan-only'], action='store_true',
                   help='Only write the plan: contact no service (the experiment is not created) and need no login.')

    for command in ('submit', 'resubmit', 'status', 'metrics', 'delete', 'download', 'stop', 'report'):
        with self.argument_context('batchai sweep ' + command) as c:
            c.argument('parallel', type=int, default=DEFAULT_PARALLEL,
                       help='Number of requests in flight at once.')
            c.argument('wait', action='store_true',
                       help='Block until every job has finished (progress on stderr); exit code 4 if a job failed or was terminated by someone else (docs/pipelines.md).')
            c.argument('interval', type=seconds, default=_in_seconds(DEFAULT_INTERVAL),
                       help='Time between two checks of the jobs while waiting: seconds, or with a unit (90s, 15m, 2h).')
            c.argument('timeout', type=seconds,
                       help='With --wait: give up after this long (seconds, or with a unit: 90s, 15m, 2h), with exit code 5 and the jobs still queued or running named.')
            c.argument('max_retries', type=int, default=DEFAULT_MAX_RETRIES,
                       help='How often to retry a request that was throttled, failed on the server or lost its connection, before giving up.')
            c.argument('job_names', options_list=['--jobs'], nargs='+',
                       help='Names of the sweep\'s jobs to act on (space-separated); default: every job of the sweep.')
            c.argument('state', arg_type=get_enum_type(STATES),
                       help='Only the jobs in this execution state.')

    with self.argument_context('batchai sweep submit', validator=validate_sweep_submit) as c:
        c.argument('plan_file', options_list=['--plan-file'], completer=FilesCompleter(),
                   help='The plan to submit, from "az batchai sweep create". Default: `<name>.plan.jsonl`. With --spec: where to write the plan.')
        c.argument('max_retries', type=int, default=DEFAULT_MAX_RETRIES,
                   help='How often to retry a request that was throttled, failed on the server or lost its connection, before giving up on the job.')

    with self.argument_context('batchai sweep run', validator=validate_sweep_run) as c:
        c.argument('spec', options_list=['--spec'], completer=FilesCompleter(),
                   help='Path of the sweep file (YAML or JSON): its objective, limits, earlyTermination and sampling steer the run.')
        c.argument('sampling', arg_type=get_enum_type(['grid', 'random', 'hyperband', 'bayesian']),
                   help='How to pick parameter values; overrides the sweep file\'s sampling.type (hyperband needs its settings in the file; bayesian suggests each job from the objective of the jobs so far, --count of them).')
        c.argument('count', type=int,
                   help='Number of jobs of a random or bayesian search. Overrides the sweep file\'s sampling.count.')
        c.argument('max_total_jobs', type=int,
                   help='Submit at most this many jobs in all (promotions included). Overrides the sweep file\'s limits.maxTotalJobs.')
        c.argument('max_concurrent_jobs', type=int,
                   help='At most this many jobs queued or running at once. Overrides the sweep file\'s limits.maxConcurrentJobs.')
        c.argument('timeout', type=minutes,
                   help='How long after the sweep\'s first job was created its running jobs are terminated and the sweep ends: minutes (a plain number, fractions allowed, as limits.timeoutMinutes) or with a unit (90s, 15m, 2h). Overrides limits.timeoutMinutes.')
        c.argument('poll_interval', type=seconds, default=_in_seconds(DEFAULT_POLL_INTERVAL),
                   help='Time between two looks at the jobs (states and new log lines): seconds, or with a unit (90s, 2m).')
        c.argument('stop_on_exit', options_list=['--stop-on-exit'], action='store_true',
                   help='When the run ends early (SIGTERM, SIGINT, SIGHUP, or an error), stop the sweep\'s queued and running jobs on the way out, as "az batchai sweep stop" does, so that nothing runs unsteered. Sweep file: limits.stopOnExit.')
        c.argument('plan_only', options_list=['--plan-only', '--validate-only'], action='store_true',
                   help='Check the sweep file as `run` does (every section, for every sampling type) and list the first jobs it would submit, with their names and values; no service is contacted, nothing is submitted and no login is needed.')
        c.argument('report', options_list=['--report'], completer=FilesCompleter(),
                   help='Keep a live HTML report of the sweep in this file while it runs (after each look at the jobs): opened in a browser it updates itself, offline, and says "final" once the run has ended. Writes a data file beside it (`<name>.live.js`). See docs/report.md.')
        c.argument('strict', options_list=['--strict'], action='store_true',
                   help='Stop the sweep (its jobs terminated, exit code 6, bad input) as soon as the jobs\' output shows that the objective is not reported: lines of NAME=VALUE pairs without the objective\'s metric, or lines its regex does not match. Without it, a warning naming the names seen. The sweep file\'s objective.strict: true does the same.')

    with self.argument_context('batchai sweep status', validator=validate_sweep_status) as c:
        c.argument('watch', options_list=['--watch'], action='store_true',
                   help='Follow the sweep until every job has ended: a one-screen summary on stderr, redrawn in place every --interval on a terminal (counts, the best job so far, the running jobs with their last step and value), one line per change elsewhere; then the status as without it.')
        c.argument('state', arg_type=get_enum_type(STATES + ['missing']),
                   help='Only the jobs in this execution state; "missing": planned jobs that are not on the service (needs the plan).')
        c.argument('job', options_list=['--job'], help='Name of one job of the sweep: print the end of its stdout.txt (and of a non-empty stderr.txt, both labelled) instead of the sweep\'s status (of a multi-process job, its master\'s: stdout-wk-0.txt for TensorFlow, stdout-0.txt for Caffe2/PyTorch on several nodes); a failed job\'s exit code and error go to stderr.')
        c.argument('tail', type=int,
                   help='With --job: number of lines to print from the end of each file (default {}).'.format(DEFAULT_TAIL))
        c.argument('stderr', options_list=['--stderr'], action='store_true',
                   help='With --job: print the end of the job\'s stderr.txt only.')
        c.argument('plan_file', options_list=['--plan-file'], completer=FilesCompleter(),
                   help='The sweep\'s plan, to show planned jobs missing on the service (state "missing") and name the service\'s jobs it lacks. Default: `<name>.plan.jsonl` when it is this sweep\'s.')

    with self.argument_context('batchai sweep resubmit', validator=validate_sweep_resubmit) as c:
        c.argument('plan_file', options_list=['--plan-file'], completer=FilesCompleter(),
                   help='The sweep\'s plan: the jobs are re-created from it (with their secrets from the environment) instead of from what the service returns.')
        c.argument('state', arg_type=get_enum_type(STATES),
                   help='Resubmit the jobs in this execution state. Default: failed, unless --jobs is given.')

    with self.argument_context('batchai sweep metrics', validator=validate_sweep_metrics) as c:
        c.argument('regex', options_list=['--regex'],
                   help='Regular expression finding the metric in each line; its group named "value" (or its first group) is the number. Without --regex and --metric: the sweep file\'s objective, as `sweep run` or `create` kept it.')
        c.argument('metric', options_list=['--metric'],
                   help='Name of a metric logged as NAME=VALUE (Katib\'s format), instead of --regex.')
        c.argument('reduce', arg_type=get_enum_type(['last', 'first', 'min', 'max', 'mean']), default='last',
                   help='How to turn the values found in one job\'s file into one number.')
        c.argument('file', options_list=['--file'],
                   help='Path of the file to read, inside the output directory (may contain subdirectories).')
        c.argument('output_directory_id', options_list=['--output-directory-id'],
                   help='ID of the job\'s output directory holding the file ("stdouterr" for stdout.txt and stderr.txt).')
        c.argument('goal', arg_type=get_enum_type(['max', 'min']),
                   help='Sort the jobs best first: the largest (max) or smallest (min) metric. Default: the objective\'s goal when the metric comes from it, else by job name.')
        c.argument('top', type=int, help='Only the first N jobs (with --goal: the N best).')
        c.argument('csv', options_list=['--csv'], completer=FilesCompleter(),
                   help='Also write the rows to this CSV file: name, state, the metric, one column per parameter.')
        c.argument('importance', options_list=['--importance'], action='store_true',
                   help='Instead of the jobs: how much each parameter mattered for the metric (PED-ANOVA over the jobs that ran to the end, as Optuna computes it), the most important first, with a 90% bootstrap interval; at least 10 such jobs. Needs a goal (--goal, or the objective\'s).')

    with self.argument_context('batchai sweep delete', validator=validate_sweep_delete) as c:
        c.argument('no_wait', options_list=['--no-wait'], action='store_true',
                   help='Return once the deletions are requested, without waiting until the jobs are gone.')

    with self.argument_context('batchai sweep stop', validator=validate_sweep_stop) as c:
        c.argument('no_wait', options_list=['--no-wait'], action='store_true',
                   help='Return once the terminations are requested, without waiting until the jobs have stopped.')
        c.argument('job_names', options_list=['--jobs'], nargs='+',
                   help='Names of the sweep\'s jobs to stop (space-separated); default: every queued or running job of the sweep.')

    with self.argument_context('batchai sweep download', validator=validate_sweep_target) as c:
        c.argument('output_directory_id', options_list=['--output-directory-id'],
                   help='ID of the one output directory to download. Default: stdouterr and every output directory of the job.')
        c.argument('dest', options_list=['--dest'], completer=FilesCompleter(),
                   help='Directory to download into, one folder per job. Default: `./<name>-outputs`.')

    with self.argument_context('batchai sweep report', validator=validate_sweep_report) as c:
        c.argument('output_file', options_list=['--output-file', '-f'], completer=FilesCompleter(),
                   help='Where to write the HTML report. Default: `<name>-report.html` in the current directory.')
        c.argument('open_report', options_list=['--open'], action='store_true',
                   help='Open the report in the default web browser once written.')
        c.argument('watch', options_list=['--watch'], action='store_true',
                   help='Keep the report current while the sweep runs, until it ends: the page opened in a browser (as a file, offline) updates itself every --interval and says "live, updated hh:mm:ss", then "final". Writes a data file beside it (`<name>.live.js`). See docs/report.md.')
        c.argument('interval', type=seconds, default=_in_seconds(REPORT_INTERVAL),
                   help='With --watch or --serve: time between two looks at the sweep (and the page\'s own refresh): seconds, or with a unit (90s, 2m).')
        c.argument('serve', options_list=['--serve'], action='store_true',
                   help='Like --watch, and serve the live page on http://127.0.0.1:PORT/ (loopback only, read-only) for a browser on this machine or Azure Cloud Shell\'s "Web preview"; keeps serving the final page until Ctrl+C.')
        c.argument('port', options_list=['--port'], type=int,
                   help='With --serve: the loopback port (default 8080, Cloud Shell\'s web preview port; 0 picks a free one).')
        c.argument('regex', options_list=['--regex'],
                   help='Regular expression finding the objective in each line; its group named "value" (or its first group) is the number. Every match is an intermediate value. Default: the sweep file\'s objective, as `sweep run` or `create` kept it.')
        c.argument('metric', options_list=['--metric'],
                   help='Name of the objective, logged as NAME=VALUE (Katib\'s format); every such line is an intermediate value. Default: the sweep file\'s objective, as `sweep run` or `create` kept it.')
        c.argument('goal', arg_type=get_enum_type(['max', 'min']),
                   help='Which way the objective is better: the largest (max) or smallest (min). Default: max, or the goal of the sweep file `sweep run` ran.')
        c.argument('step', options_list=['--step'],
                   help='Name of the key that counts as the step on each report line (e.g. epoch, from epoch=3). Default: the first of epoch, step, iteration, iter on every report line of a job, else the report\'s number.')
        c.argument('file', options_list=['--file'],
                   help='Path of the file to read, inside the output directory (may contain subdirectories). Default: the objective\'s file, else stdout.txt.')
        c.argument('output_directory_id', options_list=['--output-directory-id'],
                   help='ID of the job\'s output directory holding the file ("stdouterr" for stdout.txt and stderr.txt). Default: the objective\'s, else stdouterr.')
        c.argument('plan_file', options_list=['--plan-file'], completer=FilesCompleter(),
                   help='The sweep\'s plan, for what the service does not hold: the sampling (random search gets its expected curve) and the parameters\' scales (LOG on log axes). Default: `<name>.plan.jsonl` when it is this sweep\'s.')

    with self.argument_context('batchai sweep local') as c:
        c.argument('data_dir', options_list=['--data-dir'], completer=FilesCompleter(),
                   help='Directory of the local service\'s data (jobs, outputs, storage). Default: batchai-sweep/local in the az config directory.')

    with self.argument_context('batchai sweep local show-connection-string',
                               validator=validate_local_connection_string) as c:
        c.argument('account_name', options_list=['--name', '-n'],
                   help='Storage account name, as the recipe uses it: 3 to 24 lower-case letters and digits. On the local service every account name is a storage account, with the service\'s one key.')

    with self.argument_context('batchai sweep local start', validator=validate_local_start) as c:
        c.argument('port', type=int, default=0, help='Port of the service on 127.0.0.1. Default: a free port.')
        c.argument('slots', type=int, help='Number of jobs the local cluster runs at once. Default: the number of CPUs.')
        c.argument('faults', options_list=['--faults'],
                   help='Inject failures, for testing clients: e.g. "5xx=0.1,429=0.05,drop=0.02,seed=1".')
        c.argument('scheduler', arg_type=get_enum_type(['processes', 'slurm', 'azure-batch']), default='processes',
                   help='Where the jobs run: as processes on this machine, as Slurm batch jobs on the cluster this machine submits to (the data directory must be on a filesystem the compute nodes share), or as Azure Batch tasks on the pools of a Batch account (each cluster created is a Batch pool; az\'s login, no key).')
        c.argument('batch_account', options_list=['--batch-account'],
                   help='Azure Batch scheduler: the name of the Batch account that runs the jobs (found with your az login).')
        c.argument('batch_resource_group', options_list=['--resource-group', '-g'],
                   help='Azure Batch scheduler: the resource group of the Batch account. Default: found by the account\'s name in the subscription.')
        c.argument('pool_prefix', options_list=['--pool-prefix'],
                   help='Azure Batch scheduler: the prefix of the pools and Batch jobs the service makes (1 to 20 letters, digits, - or _). Default: batchai.')
        c.argument('gpus', options_list=['--gpus'],
                   help='Processes scheduler: the GPUs to hand out, each job its own through CUDA_VISIBLE_DEVICES: "auto" (what nvidia-smi -L lists; none without it), a count, or a comma-separated list of device indexes. Default: GPUs are not managed.')
        c.argument('partition', options_list=['--partition'],
                   help='Slurm scheduler: the partition to submit to. Default: the cluster\'s default partition.')
        c.argument('account', options_list=['--account'],
                   help='Slurm scheduler: the account to charge the jobs to (sbatch --account).')
        c.argument('retarget', options_list=['--retarget'], action='store_true',
                   help='Point this az config at the new service even though it targets another local service that still runs (whose users\' next commands then go to the new one). Without it such a start is refused; a pipeline that wants its own service sets its own AZURE_CONFIG_DIR instead.')
        c.argument('slurm_conf', options_list=['--slurm-conf'], completer=FilesCompleter(),
                   help='Slurm scheduler: the slurm.conf of the cluster. Default: SLURM_CONF of this environment, else Slurm\'s '
                        'own configuration.')
