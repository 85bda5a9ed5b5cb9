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
    `PARAM_<NAME>` environment variables, BATCHAI_SWEEP_NAME and BATCHAI_SWEEP_PARAMS.
    A sweep is one object: (resource group, workspace, experiment, sweep name -n). Its job names hash the sweep
    name with the parameter values, so two sweeps never share a job, and every command finds the sweep's jobs on
    the service by their BATCHAI_SWEEP_NAME. A re-plan never changes a sweep (see "create"); "stop" ends it.
"""

helps['batchai sweep create'] = """
type: command
short-summary: Validate and expand a sweep into a plan file, one Batch AI job definition per parameter set.
long-summary: >
    Nothing is submitted; the experiment is created on the service if it does not exist yet (with --plan-only, no
    service is contacted and no login is needed). The plan (JSON Lines, by default `<name>.plan.jsonl` in the current directory)
    holds the sweep's name and seed, then each job's name, parameter values and full job definition. It never holds
    a secret: secret fields of the job are written "$env:NAME" and read from the environment at submit time.
    Storage credentials for file parameters come from AZURE_STORAGE_KEY, AZURE_STORAGE_CONNECTION_STRING or
    AZURE_STORAGE_SAS_TOKEN, never from the sweep file. The output lists the planned jobs (with -o table, one row per
    job and one column per parameter).
    A re-plan never changes a sweep: a random sweep without a seed draws one once, records it (plan, and every
    job's BATCHAI_SWEEP_SEED) and prints it, and planning the sweep again reuses it (from its plan file, or from its
    jobs on the service). A re-plan whose sweep file, template or options change the jobs is refused, naming what
    changed, unless --allow-changes is given. The plan is written only after every check and service call has
    succeeded, and a plan file of another sweep or target is replaced only with --yes.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
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
    short-summary: Storage account name that replaces `<AZURE_BATCHAI_STORAGE_ACCOUNT>` in the job template.
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
    short-summary: Where to write the plan. Default is `<name>.plan.jsonl` in the current directory.
  - name: --max-jobs
    type: int
    short-summary: Refuse a sweep of more jobs than this unless --yes is given.
  - name: --yes -y
    type: bool
    short-summary: Plan the sweep even if it has more jobs than --max-jobs; replace a plan file of another sweep or target.
  - name: --plan-only
    type: bool
    short-summary: Only write the plan; contact no service.
  - name: --allow-changes
    type: bool
    short-summary: Replace the plan of a sweep whose sweep file or template changed on purpose.
examples:
  - name: Plan the grid search of a sweep file, listing the jobs as a table.
    text: az batchai sweep create -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --spec sweep.yaml -c nc6 --storage-account-name mystorage -o table
  - name: Plan offline, without creating the experiment.
    text: az batchai sweep create -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --spec sweep.yaml --plan-only
  - name: Plan a random search of 32 jobs with a fixed seed, whatever the sweep file's sampling says.
    text: az batchai sweep create -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr-random --spec sweep.yaml --sampling random --count 32 --seed 7
  - name: Plan a large grid (more than --max-jobs jobs) and print only the job count.
    text: az batchai sweep create -g MyResourceGroup -w MyWorkspace -e MyExperiment -n big --spec sweep.yaml --yes --query jobCount
  - name: Plan a sweep again after changing its job template on purpose.
    text: az batchai sweep create -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --spec sweep.yaml -c nc6 --allow-changes
"""

helps['batchai sweep submit'] = """
type: command
short-summary: Submit the jobs of a sweep that are not on the service yet.
long-summary: >
    Reads the plan (--plan-file, by default `<name>.plan.jsonl`), or plans the sweep first from --spec as "create"
    does. Creates the experiment if it does not exist, then every planned job that is not on the service, many at
    a time, retrying throttled and failed requests. Re-running it after a crash or Ctrl-C finishes the sweep: jobs
    already submitted are skipped, none is submitted twice. "$env:NAME" secret references are read from the
    environment, and storage mounts get their account key from AZURE_BATCHAI_STORAGE_KEY, as with
    "az batchai job create"; neither is ever printed. Exits with a non-zero code when a job could not be submitted.
    "Already present" means present and equal: before any job is created, a planned job name held by another
    sweep's job is an error naming it and its owner, and planned jobs whose definition differs from the service's
    are refused unless --allow-changes (which re-creates them). The cluster is checked before anything is created.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --plan-file
    type: string
    short-summary: The plan to submit (from "az batchai sweep create"); with --spec, where to write it.
  - name: --spec
    type: string
    short-summary: Plan the sweep from this sweep file first, then submit it (takes the options of "create").
  - name: --parallel
    type: int
    short-summary: Number of job submissions in flight at once.
  - name: --max-retries
    type: int
    short-summary: Retries of a throttled or failed request before a job is given up.
  - name: --wait
    type: bool
    short-summary: Then block until every job has finished; exit code 4 if one failed or was terminated.
  - name: --timeout
    type: string
    short-summary: With --wait, give up after this long (exit code 5, naming the unfinished jobs).
    long-summary: Seconds (a plain number, as before), or a number with a unit, 90s, 15m, 2h or 1h30m.
  - name: --allow-changes
    type: bool
    short-summary: Re-create the jobs whose planned definition differs from the service's.
examples:
  - name: Submit the sweep planned by "az batchai sweep create -n lr".
    text: az batchai sweep submit -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr
  - name: Plan and submit in one go, then wait for the jobs to finish.
    text: az batchai sweep submit -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --spec sweep.yaml -c nc6 --wait
  - name: Submit with 32 requests in flight, printing only the jobs that were not submitted.
    text: az batchai sweep submit -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --plan-file lr.plan.jsonl --parallel 32 --query notSubmitted
  - name: Submit, then wait at most an hour for the jobs.
    text: az batchai sweep submit -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --wait --timeout 3600
  - name: Plan and submit, sending the local folder ./src with every job (its command runs from $AZ_BATCHAI_SWEEP_CODE_DIR).
    text: az batchai sweep submit -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --spec sweep.yaml -c nc6 --storage-account-name mystorage --code ./src
"""

helps['batchai sweep run'] = """
type: command
short-summary: Run a sweep steered by its results, within its limits, with early termination, Hyperband or ASHA.
long-summary: |
    The controller runs in this az process: it submits jobs within the limits (maxTotalJobs, maxConcurrentJobs), watches their states and reads only the new lines of their logs each poll, terminates the jobs an earlyTermination policy stops (bandit, median, truncation, asha), submits the next jobs (new configurations, Hyperband promotions) and ends when the sampler has nothing left, the budget is spent or timeoutMinutes has passed. Every decision (a stop, a promotion, a job not promoted) is printed on stderr with its rule and numbers, and `az batchai sweep status` shows it per job. If the command is interrupted (Ctrl-C, a closed shell, a crash), run it again with the same arguments: it resumes from the jobs on the service, never submits a job twice and keeps the limits. Interrupted by SIGINT, SIGTERM or SIGHUP, it names on stderr the jobs still queued or running and the commands that stop them or resume the run, stops them first with --stop-on-exit, and exits 128 + the signal's number (130, 143, 129). The result names the best job, counts the jobs by state and by decision, says why the sweep ended and the compute used and saved. --plan-only checks the sweep file and lists the first jobs, offline.

    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes

    The sweep file's sections for `run` (besides parameters and job, as for `create`; docs/sweep-file.md):

    objective: how to read the value a job is judged by, from its output; every report is an intermediate value. metric: NAME (printed as NAME=VALUE, Katib's format) or regex: with a group "value" (and optionally "step"); goal: max or min; step: the NAME=VALUE key of the same line that is the step (epoch); file (default stdout.txt) and outputDirectoryId (default stdouterr); strict: true stops the sweep when the jobs' output shows the metric is not reported (as --strict).
    Example: objective: {metric: val_accuracy, goal: max, step: epoch}

    objectives (instead of objective): two or more {metric, goal}, each printed as NAME=VALUE in stdout.txt. The result is the Pareto front (the jobs no other job beats in every objective): run and metrics print it (table and -o json), status marks each job (Pareto: front, its dominance rank, or infeasible) and the report draws it. The first objective is the one that decides where one number must: its reports are the intermediate values earlyTermination, Hyperband and ASHA judge by, and the one stopAt, noImprovementJobs and the best job use; every other objective is its metric's last value. Bayesian sampling becomes MOTPE (good jobs by Pareto rank and hypervolume); BOHB's model (hyperband with sampler bayesian, or multiFidelity) stays the TPE of the first objective at each resource, with constraints steering it away from infeasible jobs.
    Example: objectives: [{metric: val_accuracy, goal: max}, {metric: latency_ms, goal: min}]

    constraints: [{metric, max and/or min}]: a job whose metric's last value lies outside a bound, or that never prints it, is infeasible: never the best, never on the front; bayesian sampling learns to avoid such jobs (feasible jobs first, then the least infeasible). With objective or objectives.
    Example: constraints: [{metric: memory_gb, max: 12}, {metric: val_loss, max: 0.5}]

    limits: maxTotalJobs (jobs in all, promotions included), maxConcurrentJobs (queued or running at once), timeoutMinutes (after the first job: running jobs terminated, the sweep ends), jobTimeoutMinutes (each job's maxWallClockTime), stopOnExit (true: a run that ends early stops the sweep's jobs, as --stop-on-exit), stopAt (end the sweep, its running jobs terminated, once the best objective reaches this value: ended stopAt) and noImprovementJobs (end it once this many jobs in a row ran to the end without a better best: ended plateau). Minutes may be fractions.
    Example: limits: {maxTotalJobs: 30, maxConcurrentJobs: 4, timeoutMinutes: 120, jobTimeoutMinutes: 20, stopOnExit: true}
    Example: limits: {maxTotalJobs: 50, stopAt: 0.95, noImprovementJobs: 10}

    earlyTermination: policy bandit (exactly one of slackFactor, a ratio, or slackAmount, a difference: a job below best / (1 + slackFactor), or best - slackAmount, stops), median (below the median of the running averages), truncation (truncationPercentage: the worst percent stop) or asha (minResource, maxResource, eta: successive halving over the step); evaluationInterval and delayEvaluation (reports) say when a job is judged. Not with hyperband sampling.
    Example: earlyTermination: {policy: bandit, slackFactor: 0.1, evaluationInterval: 1, delayEvaluation: 5}
    Example: earlyTermination: {policy: asha, minResource: 1, maxResource: 27, eta: 3}

    sampling: type grid (every combination), random (count, seed), hyperband (resource: the placeholder given the budget, minResource, maxResource, eta, seed) or bayesian (count, seed, startupJobs: a Tree-structured Parzen Estimator, each new job from the objective of the jobs so far; on a space of only discrete, INTEGER or stepped parameters the last 30% of count (without a count, of maxTotalJobs) are the best untried one-step neighbours of the 3 best jobs).
    Hyperband's sampler: random (the default: each bracket's configurations drawn at random) or bayesian (BOHB, Falkner et al. 2018: each new configuration from the TPE fitted on the results at the largest resource that has startupJobs of them, default the number of parameters + 3, or at a lower resource the sweep's own jobs show to rank configurations as that one does; randomFraction of them, default 1/3, drawn at random). Hyperband's iterations (default 1) runs all its brackets that many times, each iteration's brackets numbered on (with sampler bayesian, later iterations learn from the earlier ones). Bayesian sampling under earlyTermination asha takes multiFidelity: true for the same rule over ASHA's rungs (a job's value at a rung is the one ASHA judged; startupJobs and randomFraction as for Hyperband).
    warmStart (bayesian sampling, or hyperband with sampler bayesian): earlier sweeps of the same experiment (their names) or their exported results (a .json file of `az batchai sweep metrics -o json` or `az batchai sweep report -o json`, relative to the sweep file). Their finished jobs teach the sampler where the parameters match (names, types, ranges; what does not match is said on stderr and skipped); nothing is run again, they do not count toward count or maxTotalJobs (nor in the report's importance), and the report lists them, marked inherited. With objectives or constraints a job needs a value of each of their metrics (a single-objective sweep's export has none: its jobs are said and skipped).
    Example: sampling: {type: random, count: 20, seed: 7}
    Example: sampling: {type: hyperband, resource: EPOCHS, minResource: 1, maxResource: 27, eta: 3, seed: 7}
    Example: sampling: {type: bayesian, count: 30, seed: 7, startupJobs: 10}
    Example: sampling: {type: hyperband, sampler: bayesian, randomFraction: 0.2, resource: EPOCHS, minResource: 1, maxResource: 27, seed: 7}
    Example: sampling: {type: bayesian, multiFidelity: true, count: 40, seed: 7} with earlyTermination: {policy: asha, minResource: 1, maxResource: 27}
    Example: sampling: {type: bayesian, count: 30, seed: 7, warmStart: [lr-small, exports/lr-2025.json]}
parameters:
  - name: --spec
    type: string
    short-summary: Path of the sweep file (YAML or JSON); its sections are described above.
  - name: --max-total-jobs
    type: int
    short-summary: Submit at most this many jobs in all, promotions included; overrides limits.maxTotalJobs.
  - name: --max-concurrent-jobs
    type: int
    short-summary: At most this many jobs queued or running at once; overrides limits.maxConcurrentJobs.
  - name: --timeout
    type: string
    short-summary: Time after the sweep's first job; then its running jobs are terminated and it ends.
    long-summary: >
        Minutes (a plain number, fractions allowed, as limits.timeoutMinutes and as before), or a number with a
        unit, 90s, 15m, 2h or 1h30m. A run ended by it exits 0 when it has a best job, else 5 (timeout).
  - name: --poll-interval
    type: string
    short-summary: Time between two looks at the jobs' states and new log lines; seconds, or 90s, 2m.
  - name: --stop-on-exit
    type: bool
    short-summary: When the run ends early (SIGTERM, SIGINT, SIGHUP, an error), stop the sweep's jobs on the way out.
    long-summary: >
        Without it, a run that ends early leaves its queued and running jobs running, unsteered, and names them on
        stderr with the commands that stop them and that resume the run. With it (or limits.stopOnExit: true in the
        sweep file) the run stops them as "az batchai sweep stop" does before it exits (128 + the signal's number).
  - name: --strict
    type: bool
    short-summary: Stop the sweep as soon as the jobs' output shows the objective is not reported (a misnamed metric).
  - name: --plan-only --validate-only
    type: bool
    short-summary: Check the sweep file and list the first jobs run would submit; no service, no login.
examples:
  - name: Check a sweep file without a service, and see the first jobs it would submit.
    text: >
        az batchai sweep run -g batchai-local -w local -e demo -n moons --spec sweep.yaml -c local --plan-only -o table
  - name: Run an adaptive sweep on the local service, at most 3 jobs at a time.
    text: >
        az batchai sweep run -g batchai-local -w local -e demo -n moons --spec sweep.yaml -c local --max-concurrent-jobs 3
  - name: Stop at once if no job reports the objective (a misnamed metric), instead of spending the budget.
    text: >
        az batchai sweep run -g batchai-local -w local -e demo -n moons --spec sweep.yaml -c local --strict
  - name: Send the local folder ./src with every job (uploaded once per content); the job's command runs from it.
    text: >
        az batchai sweep run -g batchai-local -w local -e demo -n moons --spec sweep.yaml -c local --storage-account-name demostorage --code ./src
  - name: Keep a live report while the sweep runs - open live.html in a browser, it updates itself.
    text: >
        az batchai sweep run -g batchai-local -w local -e demo -n moons --spec sweep.yaml -c local --report live.html
  - name: Bayesian sampling (TPE) of 30 jobs, 4 at a time, whatever the sweep file's sampling says.
    text: >
        az batchai sweep run -g batchai-local -w local -e demo -n moons --spec sweep.yaml -c local --sampling bayesian --count 30 --max-concurrent-jobs 4
  - name: Model-based Hyperband (BOHB) warm started from an earlier sweep of the experiment, whose sweep file says sampling {type hyperband, sampler bayesian, warmStart [moons-small], ...}; the report names why it ended and marks the inherited jobs.
    text: |
        az batchai sweep run -g batchai-local -w local -e demo -n moons-bohb --spec bohb.yaml -c local --max-concurrent-jobs 4
        az batchai sweep report -g batchai-local -w local -e demo -n moons-bohb --output-file moons-bohb.html
  - name: Resume an interrupted run (the same arguments), then see each job's decision.
    text: |
        az batchai sweep run -g batchai-local -w local -e demo -n moons --spec sweep.yaml -c local
        az batchai sweep status -g batchai-local -w local -e demo -n moons -o table
  - name: In CI, at most two hours, and no job left running when the step is cancelled or times out.
    text: >
        timeout -k 60s 2h az batchai sweep run -g batchai-local -w local -e demo -n moons --spec sweep.yaml -c local --stop-on-exit --timeout 110m
"""

helps['batchai sweep status'] = """
type: command
short-summary: Show the state of a sweep's jobs, wait for them to finish, or print the end of one job's output.
long-summary: >
    The output holds the number of jobs in each state (counts) and one row per job: name, state, exit code, start
    time, duration and parameter values (with -o table, one column per parameter). Everything comes from the
    service: no plan file is needed. With the sweep's plan (--plan-file, or `<name>.plan.jsonl` here), planned jobs
    missing on the service are listed in state "missing", and the service's jobs the plan lacks are named
    (notInPlan). Stopped jobs show as "terminated". Without a terminal, --wait prints a progress line on stderr
    every few checks (at most every 30 seconds). A sweep "az batchai sweep run" ran with several objectives or with
    constraints marks each job (column Pareto; -o json: tuning.onFront, paretoRank, objectives and infeasible, the
    constraints it broke): "front" on the Pareto front, its dominance rank, or "infeasible".
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --state
    type: string
    short-summary: Only the jobs in this execution state.
  - name: --wait
    type: bool
    short-summary: Block until every job has finished; exit code 4 if one failed or was terminated.
  - name: --interval
    type: string
    short-summary: Time between two checks while waiting; seconds, or with a unit (90s, 15m).
  - name: --watch
    type: bool
    short-summary: Follow the sweep until every job has ended - a one-screen summary on stderr redrawn in place on a terminal (counts, best so far, running jobs and their last step), one line per change elsewhere; then the status.
  - name: --timeout
    type: string
    short-summary: With --wait, give up after this long (exit code 5, naming the unfinished jobs).
    long-summary: Seconds (a plain number, as before), or a number with a unit, 90s, 15m, 2h or 1h30m.
  - name: --job
    type: string
    short-summary: Print the end of this job's stdout.txt (and of a non-empty stderr.txt, both labelled) instead; of a multi-process job, its master's files (stdout-wk-0.txt for TensorFlow, stdout-0.txt for Caffe2/PyTorch on several nodes).
  - name: --tail
    type: int
    short-summary: With --job, the number of lines to print.
  - name: --stderr
    type: bool
    short-summary: With --job, print the end of stderr.txt only.
  - name: --plan-file
    type: string
    short-summary: The sweep's plan, to show planned jobs that are missing on the service.
examples:
  - name: Show the jobs of a sweep as a table, one column per parameter.
    text: az batchai sweep status -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr -o table
  - name: Count the jobs in each state.
    text: az batchai sweep status -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --query counts
  - name: List the failed jobs only.
    text: az batchai sweep status -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --state failed -o table
  - name: Wait until every job has finished, checking every 30 seconds.
    text: az batchai sweep status -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --wait --interval 30
  - name: Print the last 20 lines of a job's standard output.
    text: az batchai sweep status -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --job lr-0123456789abcdef --tail 20 -o tsv
  - name: Print the end of a failed job's standard error.
    text: az batchai sweep status -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --job lr-0123456789abcdef --stderr
  - name: Wait at most ten minutes (in CI, a progress line appears on stderr while waiting).
    text: az batchai sweep status -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --wait --timeout 600
  - name: Follow a running sweep on one screen that redraws itself, then print its status.
    text: az batchai sweep status -g batchai-local -w local -e demo -n moons --watch --interval 5 -o table
"""

helps['batchai sweep resubmit'] = """
type: command
short-summary: Run jobs of a sweep again under the same names (by default, the failed ones).
long-summary: >
    Each job is deleted, and once it is gone created again with the same definition: from the plan file when
    --plan-file is given (needed for jobs with secrets, which the service never returns), else as the service
    describes it. Interrupted, the same command run again finishes the work with no job lost or duplicated (without
    a plan, a journal in the az config directory keeps the definitions of the jobs being resubmitted).
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --plan-file
    type: string
    short-summary: The sweep's plan, to re-create the jobs from (with their secrets from the environment).
  - name: --jobs
    type: string
    short-summary: Names of the jobs to resubmit, whatever their state (unless --state is given too).
  - name: --state
    type: string
    short-summary: Resubmit the jobs in this state. Default is failed, unless --jobs is given.
  - name: --wait
    type: bool
    short-summary: Then block until the resubmitted jobs have finished; exit code 4 if one failed.
examples:
  - name: Resubmit the failed jobs of a sweep after fixing their cause.
    text: az batchai sweep resubmit -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr
  - name: Resubmit two jobs from the plan file and wait for them.
    text: az batchai sweep resubmit -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --plan-file lr.plan.jsonl --jobs lr-0123456789abcdef lr-fedcba9876543210 --wait
  - name: Run the jobs that "az batchai sweep stop" terminated again.
    text: az batchai sweep resubmit -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --state terminated
"""

helps['batchai sweep metrics'] = """
type: command
short-summary: Read a metric from each job's output and rank the jobs of a sweep, or its parameters by importance.
long-summary: >
    Each job's file (stdout.txt by default) is searched line by line, with --regex (a group named "value", or the
    first group, is the number) or for NAME=VALUE lines with --metric NAME. The values found in one file become one
    number with --reduce: with "last" (the default) the file is read from its end until a line holds the metric, so
    a long log is not downloaded whole; the other reductions stream the whole file. A job without the file or the
    metric shows an empty metric. For a sweep "az batchai sweep run" ran with several objectives (the sweep file's
    objectives), without --metric, --regex and --csv it prints the Pareto front instead: the jobs no other
    feasible job beats in every objective, with each objective's value, rank 0 (-o json: name, rank, values,
    parameters); --top keeps the first N.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --regex
    type: string
    short-summary: Regular expression with a group around the number.
  - name: --metric
    type: string
    short-summary: Name of a metric logged as NAME=VALUE.
  - name: --reduce
    type: string
    short-summary: Which value of a file counts (last, first, min, max or mean).
  - name: --goal
    type: string
    short-summary: Sort best first, the largest (max) or the smallest (min) metric.
  - name: --top
    type: int
    short-summary: Only the first N jobs.
  - name: --csv
    type: string
    short-summary: Also write the rows to this CSV file.
  - name: --importance
    type: bool
    short-summary: How much each parameter mattered for the metric, the most important first, instead of the jobs.
    long-summary: >
        PED-ANOVA (Watanabe et al. 2023; Optuna's default importance evaluator): for each parameter, how differently
        the values of the best jobs (the best 10%, and at least 5 jobs) are spread from those of all jobs. Shares sum
        to 100%; low and high are a 90% interval over 200 resamples of the jobs (wide when few jobs finished). It
        counts the jobs that ran to the end and those a `sweep run` decision stopped early, each with its value;
        below 10 such jobs there is no estimate, and the command says so. Each parameter is judged on its own:
        an effect that shows only in a combination of parameters is not seen. The report shows the same as a chart.
examples:
  - name: Which parameters mattered for the sweep file's objective (as `sweep run` or `create` kept it).
    text: az batchai sweep metrics -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --importance -o table
  - name: Which parameters mattered for the lowest loss each job printed, as JSON.
    text: az batchai sweep metrics -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --metric loss --reduce min --goal min --importance -o json
  - name: The 5 jobs with the highest accuracy, logged as "accuracy=0.93".
    text: az batchai sweep metrics -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --metric accuracy --goal max --top 5 -o table
  - name: The lowest loss each job printed (lines like "loss 0.25"), found by a regular expression, also written to a CSV file.
    text: az batchai sweep metrics -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --regex "loss (\\S+)" --reduce min --goal min --csv lr.csv
  - name: Read the metric from a file of an output directory.
    text: az batchai sweep metrics -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --regex "score (\\d+)" --output-directory-id MODEL --file logs/metrics.txt
  - name: The Pareto front of a sweep run with objectives (accuracy against latency, say).
    text: az batchai sweep metrics -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr -o table
"""

helps['batchai sweep delete'] = """
type: command
short-summary: Delete the jobs of a sweep (all of them, those in one state, or the named ones).
long-summary: >
    Only jobs of the named sweep are ever deleted, never other jobs of the experiment. Asks for confirmation unless
    --yes is given, and waits until the jobs are gone unless --no-wait is given.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --state
    type: string
    short-summary: Only the jobs in this execution state.
  - name: --jobs
    type: string
    short-summary: Names of the jobs to delete.
  - name: --no-wait
    type: bool
    short-summary: Return once the deletions are requested; like any az --no-wait, print no result.
examples:
  - name: Delete every job of a sweep, without a prompt.
    text: az batchai sweep delete -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --yes
  - name: Delete the failed jobs of a sweep.
    text: az batchai sweep delete -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --state failed --yes
"""

helps['batchai sweep stop'] = """
type: command
short-summary: Stop a sweep, terminating its queued and running jobs (or the named ones).
long-summary: >
    Uses Batch AI's job terminate operation: the jobs stay, with their outputs, and "status" shows them as
    terminated; "resubmit --state terminated" (or --jobs) runs them again under the same names. Only the named
    sweep's jobs are touched. Stopping a sweep with nothing running does nothing and says so. Asks for
    confirmation unless --yes is given, and waits until the jobs have stopped unless --no-wait is given. The
    output lists the jobs stopped (stopped), those that had already finished (notRunning) and any not stopped.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --jobs
    type: string
    short-summary: Names of the sweep's jobs to stop; default is every queued or running job of the sweep.
  - name: --no-wait
    type: bool
    short-summary: Return once the terminations are requested; like any az --no-wait, print no result.
examples:
  - name: Stop every queued and running job of a sweep, without a prompt.
    text: az batchai sweep stop -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --yes
  - name: Stop two jobs of a sweep and return at once.
    text: az batchai sweep stop -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --jobs lr-0123456789abcdef lr-fedcba9876543210 --yes --no-wait
"""

helps['batchai sweep download'] = """
type: command
short-summary: Download the output files of a sweep's jobs, one folder per job.
long-summary: >
    Files go to `<dest>/<job>/<output directory id>/<path>`. A file already there with the size the service reports
    is skipped, so an interrupted download can be run again.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --dest
    type: string
    short-summary: Directory to download into. Default is `./<name>-outputs`.
  - name: --output-directory-id
    type: string
    short-summary: Only this output directory; default is stdouterr and every output directory of the job.
  - name: --jobs
    type: string
    short-summary: Names of the jobs to download; default is every job of the sweep.
examples:
  - name: Download every output of a sweep into ./lr-outputs.
    text: az batchai sweep download -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr
  - name: Download the MODEL output directory of one job.
    text: az batchai sweep download -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --jobs lr-0123456789abcdef --output-directory-id MODEL --dest models
"""

helps['batchai sweep report'] = """
type: command
short-summary: Write a sweep's report, one self-contained HTML file with the plots people look at.
long-summary: >
    Reads what the service holds about the sweep (the jobs as "status" lists them, and every value of the objective
    each job printed, found as "metrics" finds it) and writes one HTML file that opens anywhere with nothing fetched
    from the network: a summary (objective and goal, counts by state, the best job with its parameters, compute used
    and saved by early termination, when the sweep ran), learning curves (the objective against the step, one line
    per job, stopped, failed and best jobs marked, the decision taken about a job on hover), parallel coordinates
    coloured by the objective (LOG parameters on log axes), the objective against each parameter, what mattered (each
    parameter's importance for the objective, for each objective of a sweep with several, with a 90% interval: as
    "metrics --importance" prints it), the best value so far against jobs finished (with random search's expected curve for a random sweep) and a sortable table of the
    jobs. Large sweeps draw a sample of the lines (with the median and a band over every job) and page the table.
    For a sweep "az batchai sweep run" ran, each job's decision (rule and numbers) is shown as "status" shows it,
    and as with "metrics" the sweep file's objective is the default of --metric/--regex. The command's output (-o json) is the data the plots
    show; -o table prints one summary row; -o none only writes the file.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --output-file -f
    type: string
    short-summary: Where to write the HTML report. Default is `<name>-report.html` in the current directory.
  - name: --open
    type: bool
    short-summary: Open the report in the default web browser once written.
  - name: --metric
    type: string
    short-summary: Name of the objective, logged as NAME=VALUE (Katib's format), instead of --regex; default is the objective of the sweep run.
  - name: --regex
    type: string
    short-summary: Regular expression with a group around the objective's number, instead of --metric.
  - name: --goal
    type: string
    short-summary: max (larger is better, the default) or min.
  - name: --step
    type: string
    short-summary: Key on each report line that counts as the step, e.g. epoch; default is detected per job.
  - name: --file
    type: string
    short-summary: Path of the file holding the values, inside the output directory; default is stdout.txt.
  - name: --output-directory-id
    type: string
    short-summary: ID of the output directory holding the file; default is stdouterr.
  - name: --watch
    type: bool
    short-summary: Keep the report current until the sweep ends; the open page updates itself (offline) and says "live, updated hh:mm:ss", then "final".
  - name: --serve
    type: bool
    short-summary: Like --watch, and serve the live page on http://127.0.0.1:PORT/ (loopback only, read-only), for Cloud Shell's Web preview.
  - name: --port
    type: int
    short-summary: With --serve, the loopback port (default 8080; 0 picks a free one).
  - name: --plan-file
    type: string
    short-summary: The sweep's plan, for its sampling and the parameters' scales; default is `<name>.plan.jsonl` when it exists.
examples:
  - name: Write the report of a sweep whose jobs print val_accuracy=V once per epoch, and open it.
    text: az batchai sweep report -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --metric val_accuracy --open
  - name: A loss (lower is better) found by a regex, written to a given file; print one summary row.
    text: az batchai sweep report -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --regex "loss=([0-9.]+)" --goal min --output-file lr.html -o table
  - name: The data the plots show, as JSON, for plotting it another way.
    text: az batchai sweep report -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --metric val_accuracy --step epoch -o json
  - name: After "az batchai sweep run" - the sweep file's objective, and each job's decision; only write the file.
    text: az batchai sweep report -g MyResourceGroup -w MyWorkspace -e MyExperiment -n adaptive -f adaptive.html -o none
  - name: Follow a running sweep - live.html updates itself in the open browser tab every 10 seconds until the sweep ends.
    text: az batchai sweep report -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr -f live.html --watch --interval 10 -o none
  - name: The same live page on http://127.0.0.1:8080/ (loopback), for Cloud Shell's Web preview.
    text: az batchai sweep report -g MyResourceGroup -w MyWorkspace -e MyExperiment -n lr --serve --port 8080 -o none
"""

helps['batchai sweep local'] = """
type: group
short-summary: A local Batch AI service, to run sweeps on this machine.
long-summary: >
    "local start" runs a service that speaks the Batch AI API on 127.0.0.1, with one workspace (local), one cluster
    (local) in resource group batchai-local, and runs the jobs as local processes (or, with --scheduler slurm, as
    Slurm batch jobs on a cluster). It also points every
    "az batchai sweep" command at it (az config batchai_sweep.endpoint and token_file; the environment variables
    AZURE_BATCHAI_SWEEP_ENDPOINT and AZURE_BATCHAI_SWEEP_TOKEN_FILE override them) until "local stop", and az's own
    "az batchai" commands too (workspace, cluster, experiment, job create/show/list, job file list/stream), so the
    Batch AI recipes run unchanged, with no "az login"; "local show-connection-string" points az's storage commands
    at its Files and Blob endpoints.
"""

helps['batchai sweep local start'] = """
type: command
short-summary: Start the local Batch AI service in the background and point the sweep commands at it.
long-summary: >
    Returns the running service if one already runs on the data directory (and says that it is shared).
    The service is this az config's: its data directory defaults to one in the az config directory, and the config
    section batchai_sweep (endpoint, token_file) points the commands at it. A pipeline isolates itself with its own
    config directory, AZURE_CONFIG_DIR (export AZURE_CONFIG_DIR="$(mktemp -d)" before "local start": its service,
    data and target are then its own), or points its commands at a service with the environment variables
    AZURE_BATCHAI_SWEEP_ENDPOINT and AZURE_BATCHAI_SWEEP_TOKEN_FILE, which override the config. A start that would
    retarget a config whose current service still runs (another data directory) is refused unless --retarget is
    given; "local stop" clears the target only once no service runs for it.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --port
    type: int
    short-summary: Port on 127.0.0.1; default is a free port.
  - name: --data-dir
    type: string
    short-summary: Directory of the service's data; default is batchai-sweep/local in the az config directory.
  - name: --slots
    type: int
    short-summary: Number of jobs run at once; default is the number of CPUs.
  - name: --faults
    type: string
    short-summary: Inject failures for testing, e.g. "5xx=0.1,429=0.05,drop=0.02,seed=1".
  - name: --scheduler
    type: string
    short-summary: Where jobs run, "processes" on this machine (default), "slurm", as Slurm batch jobs, or "azure-batch", as Azure Batch tasks.
    long-summary: With slurm, run it on a machine that can submit to the cluster (a login node); the data directory must be on a filesystem the compute nodes share. docs/slurm.md has the mapping of Batch AI fields. With azure-batch, each cluster created through the service is a Batch pool of --batch-account and each job a Batch task, with your az login (no key); docs/azure-batch.md has the mapping.
  - name: --batch-account
    type: string
    short-summary: Azure Batch only (required there). The Batch account whose pools run the jobs.
  - name: --resource-group -g
    type: string
    short-summary: Azure Batch only. The resource group of the Batch account; default is found by the account's name.
  - name: --pool-prefix
    type: string
    short-summary: Azure Batch only. Prefix of the pool and Batch job ids the service makes; default is batchai.
  - name: --gpus
    type: string
    short-summary: Processes scheduler only. GPUs handed out, each job its own, as "auto", a count or a list.
  - name: --partition
    type: string
    short-summary: Slurm only. The partition to submit to; default is the cluster's default partition.
  - name: --account
    type: string
    short-summary: Slurm only. The account to charge the jobs to.
  - name: --slurm-conf
    type: string
    short-summary: "Slurm only. The cluster's slurm.conf. Default: the SLURM_CONF of this shell's environment, else Slurm's own configuration; every Slurm command of the service (sbatch included) uses it."
  - name: --retarget
    type: bool
    short-summary: Point this config at the new service although it targets another one that still runs.
examples:
  - name: Start the local service and run a sweep on it.
    text: |
        az batchai sweep local start
        az batchai sweep submit -g batchai-local -w local -e demo -n lr --spec sweep.yaml -c local --wait
  - name: Start a service that runs 2 jobs at a time on a given port.
    text: az batchai sweep local start --slots 2 --port 8950
  - name: Run the jobs on the Slurm cluster of this login node, in partition gpu.
    text: az batchai sweep local start --scheduler slurm --partition gpu --account myproject
  - name: Run the jobs on this machine, each on its own GPU of the four it has.
    text: az batchai sweep local start --gpus 0,1,2,3
  - name: Run the jobs as Azure Batch tasks of Batch account mybatch (your az login), on a pool made by cluster create.
    text: |
        az batchai sweep local start --scheduler azure-batch --batch-account mybatch -g MyResourceGroup --pool-prefix lab
        az batchai cluster create -n t4 -g batchai-local -w local -s Standard_NC4as_T4_v3 --min 0 --max 4 -u batchai -k ~/.ssh/id_rsa.pub
  - name: A CI pipeline's own service, config and data, untouched by any other pipeline on the machine.
    text: |
        export AZURE_CONFIG_DIR="$(mktemp -d)"
        az batchai sweep local start --only-show-errors -o none
"""

helps['batchai sweep local status'] = """
type: command
short-summary: Show whether the local Batch AI service runs, where, and whether the sweep commands use it.
long-summary: >
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --data-dir
    type: string
    short-summary: Directory of the service's data; default is the service the sweep commands use (az config), else batchai-sweep/local in the az config directory.
examples:
  - name: Show the local service.
    text: az batchai sweep local status -o table
  - name: On Azure Batch, the pools (clusters) with the nodes each holds now.
    text: az batchai sweep local status --query "pools[].{cluster:cluster, nodes:nodes}" -o table
"""

helps['batchai sweep local show-connection-string'] = """
type: command
short-summary: Show the connection string that points az's storage commands at the local Files and Blob endpoints.
long-summary: >
    Export it as AZURE_STORAGE_CONNECTION_STRING and "az storage share create", "az storage file upload",
    "az storage container create" and "az storage blob upload|upload-batch|download|list" work against the local
    service's file shares and blob containers, which jobs mount (azureFileShares, azureBlobFileSystems). The string
    holds the service's storage account key: it is shown here only, never in the output of the other commands or in
    logs. Queue and table requests made with it stay on this machine and are refused there.
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --name -n
    type: string
    short-summary: Storage account name (3 to 24 lower-case letters and digits); any name is a local account.
  - name: --data-dir
    type: string
    short-summary: Directory of the service's data; default is that of the targeted service, else batchai-sweep/local.
examples:
  - name: Point az's storage commands at the local service, then upload a training script to a file share and a dataset folder to a blob container (jobs mount them with azureFileShares and azureBlobFileSystems).
    text: |
        export AZURE_STORAGE_CONNECTION_STRING="$(az batchai sweep local show-connection-string -n mystorage --query connectionString -o tsv)"
        az storage share create -n scripts --account-name mystorage
        az storage file upload -s scripts --source train.py --account-name mystorage
        az storage container create -n data --account-name mystorage
        az storage blob upload-batch -d data -s ./mnist --destination-path mnist --account-name mystorage
"""

helps['batchai sweep local stop'] = """
type: command
short-summary: Stop the local Batch AI service; the sweep commands then use your Azure login again.
long-summary: >
    Running jobs are stopped and recorded as failed; the data directory is kept for the next start. On Slurm and Azure Batch the jobs run on, and the next start re-attaches to them; on Azure Batch it lists the pools that still hold nodes (they cost money until they scale to zero or are deleted).
    Exit codes, the same for every az batchai sweep command (0 succeeded, 3 not found, 4 jobs failed or stopped, 5 timeout, 6 bad input, 7 no service, 128+N a signal): https://github.com/azext-batchai-sweep/azext-batchai-sweep/blob/main/docs/pipelines.md#exit-codes
parameters:
  - name: --data-dir
    type: string
    short-summary: Directory of the service's data; default is batchai-sweep/local in the az config directory.
examples:
  - name: Stop the local service.
    text: az batchai sweep local stop
"""
