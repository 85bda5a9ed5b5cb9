# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
# pylint: disable=line-too-long
from argcomplete.completers import FilesCompleter
from azure.cli.core.commands.parameters import get_enum_type, resource_group_name_type

from ._validators import validate_sweep_create

DEFAULT_MAX_JOBS = 10000


def load_arguments(self, _):

    with self.argument_context('batchai sweep') as c:
        c.argument('resource_group', resource_group_name_type)
        c.argument('workspace_name', options_list=['--workspace', '-w'], configured_default='batchai_workspace',
                   help='Name of the Batch AI workspace. You can configure the default using `az configure --defaults batchai_workspace=<name>`.')
        c.argument('experiment_name', options_list=['--experiment', '-e'], configured_default='batchai_experiment',
                   help='Name of the experiment the jobs belong to. You can configure the default using `az configure --defaults batchai_experiment=<name>`.')
        c.argument('sweep_name', options_list=['--name', '-n'],
                   help='Name of the sweep: letters, digits, "-" and "_". It names the default plan file and is set in every job as BATCHAI_SWEEP_NAME.')

    with self.argument_context('batchai sweep create', validator=validate_sweep_create) as c:
        c.argument('spec', options_list=['--spec'], completer=FilesCompleter(),
                   help='Path of the sweep file (YAML or JSON): jobNamePrefix, sampling, parameters and the job.')
        c.argument('template', options_list=['--template'], completer=FilesCompleter(),
                   help='Path of a job.json to use as the job template, instead of the "job" of the sweep file.')
        c.argument('cluster', options_list=['--cluster', '-c'],
                   help='Name or ARM ID of the cluster to run the jobs on; fills the job\'s cluster.id. You need to provide the ARM ID if the cluster belongs to a different workspace.')
        c.argument('storage_account_name', options_list=['--storage-account-name'],
                   help='Storage account name that replaces <AZURE_BATCHAI_STORAGE_ACCOUNT> in the job template. Can be specified using the AZURE_BATCHAI_STORAGE_ACCOUNT environment variable.')
        c.argument('sampling', arg_type=get_enum_type(['grid', 'random']),
                   help='How to pick parameter values: every combination (grid) or --count random draws (random). Overrides the sweep file\'s sampling.type.')
        c.argument('count', type=int,
                   help='Number of jobs of a random search. Overrides the sweep file\'s sampling.count.')
        c.argument('seed', type=int,
                   help='Seed of the random draws (0 or more): the same seed plans the same jobs. Overrides the sweep file\'s sampling.seed; if neither gives one, a seed is chosen and reported.')
        c.argument('plan_file', options_list=['--plan-file'], completer=FilesCompleter(),
                   help='Where to write the plan (JSON Lines). Default: <name>.plan.jsonl in the current directory.')
        c.argument('max_jobs', type=int, default=DEFAULT_MAX_JOBS,
                   help='Refuse a sweep of more jobs than this unless --yes is given.')
        c.argument('yes', options_list=['--yes', '-y'], action='store_true',
                   help='Plan the sweep even if it has more jobs than --max-jobs.')
