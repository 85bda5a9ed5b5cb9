# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
# pylint: disable=line-too-long
from knack.help_files import helps  # pylint: disable=unused-import

helps['batchai sweep'] = """
type: group
short-summary: Parameter sweeps on Batch AI. Plan a grid or random search from a sweep file, then run it as jobs.
long-summary: >
    A sweep file (YAML or JSON) lists parameters (numeric ranges, discrete values, dicts of values, files in Azure
    Storage) and a Batch AI job (job.json) with {{NAME}} placeholders where their values go. Every job also gets
    PARAM_<NAME> environment variables, BATCHAI_SWEEP_NAME and BATCHAI_SWEEP_PARAMS.
"""

helps['batchai sweep create'] = """
type: command
short-summary: Validate and expand a sweep into a plan file, one Batch AI job definition per parameter set.
long-summary: >
    Works offline: nothing is submitted. The plan (JSON Lines, by default <name>.plan.jsonl in the current directory)
    holds the sweep's name and seed, then each job's name, parameter values and full job definition. It never holds
    a secret: secret fields of the job are written "$env:NAME" and read from the environment at submit time.
    Storage credentials for file parameters come from AZURE_STORAGE_KEY, AZURE_STORAGE_CONNECTION_STRING or
    AZURE_STORAGE_SAS_TOKEN, never from the sweep file. The output lists the planned jobs (with -o table, one row per
    job and one column per parameter).
parameters:
  - name: --spec
    type: string
    short-summary: Path of the sweep file (YAML or JSON).
    long-summary: >
        Its fields are jobNamePrefix, sampling ({type: grid} or {type: random, count: N, seed: N}), parameters
        (each with a name and a type of numeric, discrete, dict or file) and job (a path to a job.json relative to
        the sweep file, or the job inline). Placeholders {{NAME}} in the job mark where each value goes.
  - name: --template
    type: string
    short-summary: Path of a job.json to use as the job template instead of the sweep file's "job".
  - name: --cluster -c
    type: string
    short-summary: Name or ARM ID of the cluster to run the jobs on.
  - name: --storage-account-name
    type: string
    short-summary: Storage account name that replaces <AZURE_BATCHAI_STORAGE_ACCOUNT> in the job template.
  - name: --sampling
    type: string
    short-summary: grid (every combination) or random (--count random draws); overrides the sweep file.
  - name: --count
    type: int
    short-summary: Number of jobs of a random search; overrides the sweep file.
  - name: --seed
    type: int
    short-summary: Seed of the random draws; the same seed plans the same jobs.
  - name: --plan-file
    type: string
    short-summary: Where to write the plan. Default is <name>.plan.jsonl in the current directory.
  - name: --max-jobs
    type: int
    short-summary: Refuse a sweep of more jobs than this unless --yes is given.
  - name: --yes -y
    type: bool
    short-summary: Plan the sweep even if it has more jobs than --max-jobs.
examples:
  - name: Plan the grid search of a sweep file, listing the jobs as a table.
    text: az batchai sweep create -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --spec sweep.yaml -c nc6 --storage-account-name mystorage -o table
  - name: Plan a random search of 32 jobs with a fixed seed, whatever the sweep file's sampling says.
    text: az batchai sweep create -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr-random --spec sweep.yaml --sampling random --count 32 --seed 7
  - name: Plan a large grid (more than --max-jobs jobs) and print only the job count.
    text: az batchai sweep create -g MyResourceGroup -w MyWorkspace -e MyExperiment -n big --spec sweep.yaml --yes --query jobCount
  - name: Use the workspace and experiment configured as defaults.
    text: |
        az configure --defaults group=MyResourceGroup batchai_workspace=MyWorkspace batchai_experiment=MyExperiment
        az batchai sweep create -n lr --spec sweep.yaml
"""
