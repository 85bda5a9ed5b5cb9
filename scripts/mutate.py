"""Mutation testing of the core (`make mutate`, mutmut 3): does a test fail when a module's behaviour changes?

For each module of MODULES, mutmut makes small changes to it one at a time (a comparison flipped, a constant moved,
an argument dropped...) and runs the module's own tests (its narrowest selection, not the suite) on each: a mutant
that no test kills is a behaviour no test checks, or an equivalent change. Each module runs in a folder of its own,
build/mutate/<name>/ (a copy of the package and the tests: mutmut writes its mutants/ beside them), so that the
modules' runs and the source tree never meet. Results: build/mutate/<name>/summary.json, and the figures printed;
docs/mutation-testing.md keeps the kill rates and the survivors with why each one is left.

    python scripts/mutate.py                      # every module (hours on 2 cores)
    python scripts/mutate.py params store         # some of them
    python scripts/mutate.py --list               # the modules and their tests
    python scripts/mutate.py --recheck params     # the survivors of an earlier run against today's tests
    python scripts/mutate.py --recheck store --tests tests/localservice/test_store_rows.py   # only the new tests
    python scripts/mutate.py --recheck metrics --tests T --only get_metrics   # only that function's survivors
    python scripts/mutate.py --resume policies    # go on with a run that was stopped (Ctrl-C, a deadline)
    python scripts/mutate.py --resume metrics --mutants '*ǁ__init____mutmut_*'   # only these (mutmut's names)
    MUTATE_CHILDREN=2 python scripts/mutate.py x  # mutants run at once (default 1)
"""
import argparse
import ast
import difflib
import functools
import glob
import json
import os
import shutil
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = 'azext_batchai_sweep'
BUILD = os.path.join(REPO, 'build', 'mutate')
RECHECK_TIMEOUT = 300  # seconds one survivor's tests may take in --recheck before it counts as a timeout
ORDER_PLUGIN = 'mutate_order'  # scripts/mutate_order.py: a mutant's tests fastest first
# the generated (hypothesis) tests' profile in a mutation run: fewer sequences, the same each run, no deadline
# (tests/hostile_values.py's `bounded`); `make test` never sets it
HYPOTHESIS_ENV = {'HYPOTHESIS_PROFILE': 'mutate'}

# name: (the module's files, relative to the package; the tests of its behaviour)
MODULES = {
    'params': (['core/spec/params.py'], ['tests/core/test_params.py', 'tests/sweepfile/test_random_uniform.py']),
    # the tests that load sweep files in-process (not the plan's, the schema validator's or yaml_depth's)
    'sweepfile-sampling': (['core/spec/sweepfile.py'], ['tests/sweepfile/test_sweepfile.py',
                                                        'tests/sweepfile/test_tuning_sections.py',
                                                        'tests/sweepfile/test_objectives_sections.py',
                                                        'tests/sweepfile/test_bayesian_sampling.py',
                                                        'tests/sweepfile/test_model_sampling.py',
                                                        'tests/sweepfile/test_random_uniform.py',
                                                        'tests/sweepfile/test_path_prefixes.py',
                                                        'tests/sweepfile/test_document_limits.py',
                                                        # the rules its first runs found untested
                                                        'tests/sweepfile/test_sweepfile_rules.py']),
    'space': (['core/tuning/samplers/space.py'], ['tests/tuning/test_tpe.py', 'tests/tuning/test_tpe_oracle.py',
                                                  'tests/tuning/test_tpe_local.py',
                                                  'tests/tuning/test_space_rules.py']),
    'policies': (['core/tuning/policies/*.py'], ['tests/tuning/test_policies.py', 'tests/tuning/test_policy_rules.py',
                                                 'tests/tuning/test_hostile_reports.py',
                                                 'tests/tuning/test_decision_wording.py',
                                                 'tests/tuning/test_optuna_oracle.py',
                                                 # ASHA's poll read counted (its table of the rungs kept per poll)
                                                 'tests/tuning/test_poll_cost_bounded.py']),
    # every sampler but space.py (the module `space` above): 3,097 mutants whose TPE tests take seconds each, so
    # run in four parts, each with its own tests (a survivor of the TPE's core runs about 75 s of tests)
    'samplers-blind': (['core/tuning/samplers/{}.py'.format(f) for f in ('__init__', 'base', 'grid', 'random_search')],
                       ['tests/tuning/test_samplers_controller.py', 'tests/tuning/test_poll_cost_bounded.py',
                        'tests/tuning/test_tpe_jobs_to_run.py', 'tests/tuning/test_warm_start.py',
                        'tests/tuning/test_combinations.py', 'tests/tuning/test_bohb.py',
                        'tests/sweepfile/test_bayesian_sampling.py', 'tests/sweepfile/test_model_sampling.py',
                        'tests/sweepfile/test_objectives_sections.py', 'tests/tuning/test_sampler_rules.py']),
    'samplers-hyperband': (['core/tuning/samplers/{}.py'.format(f) for f in ('hyperband', 'multifidelity')],
                           ['tests/tuning/test_samplers_controller.py', 'tests/tuning/test_bohb.py',
                            'tests/tuning/test_optuna_oracle.py', 'tests/tuning/test_hostile_reports.py',
                            'tests/tuning/test_combinations.py', 'tests/tuning/test_warm_start.py',
                            'tests/tuning/test_sampler_rules.py']),
    'samplers-bohb': (['core/tuning/samplers/{}.py'.format(f) for f in ('bohb', 'agreement')],
                      ['tests/tuning/test_bohb.py', 'tests/tuning/test_combinations.py',
                       'tests/tuning/test_warm_start.py', 'tests/tuning/test_tpe_scale.py',
                       'tests/tuning/test_sampler_rules.py',
                       # the model view kept from one suggestion to the next (values read again, TPE told what changed)
                       'tests/tuning/test_suggest_kept.py', 'tests/tuning/test_suggest_share.py',
                       'tests/tuning/test_tpe_incremental.py', 'tests/tuning/test_bohb_view_survivors.py',
                       'tests/tuning/test_tpe_listed_kept.py']),
    # changes.py: the comparison of a poll's trials with the last poll's that TPE's history (and BOHB's view) edit by
    'samplers-tpe': (['core/tuning/samplers/{}.py'.format(f) for f in ('tpe', 'parzen', '_normal', 'motpe', 'changes')],
                     ['tests/tuning/test_tpe.py', 'tests/tuning/test_tpe_oracle.py', 'tests/tuning/test_tpe_local.py',
                      'tests/tuning/test_tpe_scale.py', 'tests/tuning/test_tpe_jobs_to_run.py',
                      'tests/tuning/test_pareto.py', 'tests/tuning/test_hostile_reports.py',
                      'tests/tuning/test_warm_start.py', 'tests/tuning/test_sampler_rules.py',
                      # the model kept across suggestions (warm == cold, each edit counted)
                      'tests/tuning/test_tpe_incremental.py', 'tests/tuning/test_suggest_share.py',
                      'tests/tuning/test_combinations.py', 'tests/tuning/test_tpe_untried.py',
                      'tests/tuning/test_normal_tails.py', 'tests/tuning/test_motpe_rules.py',
                      'tests/tuning/test_suggest_kept.py', 'tests/tuning/test_parzen_pruned_edges.py',
                      'tests/tuning/test_motpe_split_edges.py', 'tests/tuning/test_tpe_random_fallback.py',
                      'tests/tuning/test_parzen_caches_bounded.py', 'tests/tuning/test_parzen_line_gap.py',
                      'tests/tuning/test_tpe_candidate_score.py', 'tests/tuning/test_parzen_survivors_last.py',
                      'tests/tuning/test_tpe_history_survivors.py', 'tests/tuning/test_parzen_update_survivors.py',
                      'tests/tuning/test_changes_survivors.py', 'tests/tuning/test_parzen_log_pdf_survivors.py',
                      'tests/tuning/test_tpe_goal_refused.py', 'tests/tuning/test_normal_sample_ends.py',
                      'tests/tuning/test_tpe_suggest_survivors.py', 'tests/tuning/test_tpe_next_rounds.py',
                      # what a poll lists and splits again (the kept split: counts of work)
                      'tests/tuning/test_tpe_listed_kept.py', 'tests/tuning/test_parzen_filter_survivors.py',
                      'tests/tuning/test_tpe_defaults.py', 'tests/tuning/test_parzen_previous_settings.py',
                      'tests/tuning/test_tpe_point_memo.py']),
    'metrics': (['core/outputs/metrics.py'], ['tests/experiment/test_metrics_extractor.py',
                                              'tests/experiment/test_metrics_rules.py',
                                              'tests/experiment/test_metrics_retry_settings.py',
                                              'tests/experiment/test_metrics_sparse_dense.py',
                                              'tests/experiment/test_service_flow.py',
                                              'tests/tuning/test_one_reading_of_a_line.py',
                                              'tests/tuning/test_steps_bounded.py',
                                              'tests/tuning/test_infeasible_never_best.py',
                                              'tests/tuning/test_hostile_reports.py']),
    # the tests that call report_data in-process (not the Chromium renderings, slow, nor the CLI's through az)
    'report-data': (['core/report/data.py'], ['tests/report/test_report_data.py',
                                              'tests/report/test_report_data_rules.py',
                                              'tests/report/test_report_pareto.py',
                                              'tests/report/test_report_run_outline.py',
                                              'tests/report/test_report_scheduler_ids.py',
                                              'tests/report/test_report_hostile.py',
                                              'tests/report/test_report_screen.py',
                                              # the live report's memo (its writer's tests: 17 s, no rule here)
                                              'tests/report/test_report_live_core.py::test_a_live_update_makes_'
                                              'the_summaries_again_only_when_their_inputs_changed',
                                              'tests/report/test_importance_report.py',
                                              'tests/report/test_importance_resources.py',
                                              'tests/cli/test_units_and_labels.py::test_a_duration_reads_the_same_'
                                              'in_status_and_the_report',
                                              'tests/cli/test_units_and_labels.py::test_every_duration_column_of_'
                                              'the_report_table_names_its_unit',
                                              'tests/cli/test_units_and_labels.py::test_a_share_saved_reads_the_'
                                              'same_in_run_and_the_report']),
    'store': (['localservice/data/store.py'], ['tests/localservice/test_store_rows.py',
                                               'tests/localservice/test_store_tree.py',
                                               'tests/localservice/test_store_queue.py']),
    # the Runner in the test's own process (the service tests run it in another, which mutmut never maps)
    'runner': (['localservice/schedulers/processes/runner.py'], ['tests/localservice/test_runner_in_process.py']),
    # the batch script run by bash in the test's process (real Slurm runs it in the service's, which mutmut never maps)
    'slurm-mapping': (['localservice/schedulers/slurm/mapping.py'], ['tests/slurm/test_slurm_mapping.py',
                                                                     'tests/slurm/test_slurm_mapping_rules.py',
                                                                     'tests/slurm/test_slurm_batch_script.py']),
    'batch-states': (['localservice/schedulers/azurebatch/states.py'], ['tests/azurebatch/test_states.py',
                                                             'tests/azurebatch/test_states_nodes.py',
                                                             'tests/azurebatch/test_states_outcomes.py',
                                                             # its tests of states (the rest start Azurite)
                                                             'tests/azurebatch/test_task_logs.py::'
                                                             'test_a_failed_log_upload_is_not_the_jobs_failure',
                                                             'tests/azurebatch/test_task_logs.py::'
                                                             'test_a_sas_quoted_by_batch_never_reaches_a_stored_'
                                                             'error']),
    'batch-client': (['localservice/schedulers/azurebatch/client.py'], ['tests/azurebatch/test_client.py',
                                                             'tests/azurebatch/test_client_calls.py',
                                                             'tests/azurebatch/test_client_task_retry.py',
                                                             'tests/azurebatch/test_client_edges.py']),
    'batch-pools': (['localservice/schedulers/azurebatch/pools.py'], ['tests/azurebatch/test_pools.py',
                                                            'tests/azurebatch/test_pools_rules.py']),
    'batch-tasks': (['localservice/schedulers/azurebatch/tasks.py'], ['tests/azurebatch/test_tasks.py',
                                                            'tests/azurebatch/test_tasks_rules.py',
                                                            # the task body run by the node wrapper, as on a node
                                                            'tests/azurebatch/test_node_wrapper.py']),
}

# Modules whose code signals the process groups it finds in /proc (the runner's crash recovery kills what a dead
# service left): a mutant of that code can aim SIGKILL at any process of the machine (one did: it killed every
# process group of a shared machine). They run only in a PID namespace of their own (`unshare`, root), where /proc
# lists and a signal reaches nothing but the run's own processes; where none can be made, they are refused.
ISOLATED = ('runner',)
# Lines left unmutated (mutmut's do_not_mutate_patterns), so that no mutant signals a process group that is not a
# job's, even in the namespace (there the run's own group: the run would kill itself): `_groups_with_marker`'s test
# of the marker and its read of the group id (a mutant of either picks every process, its session or its parent).
NOT_MUTATED = {'runner': [r"if needle not in f\.read\(\)\.split", r"groups\.add\(int\(stat\[stat\.rindex"]}
ISOLATE = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child']

STATUSES = ('killed', 'survived', 'timeout', 'no tests', 'suspicious', 'skipped', 'segfault', 'not checked',
            'check was interrupted by user')
ALIVE = ('survived', 'no tests', 'suspicious')  # what a test should have killed (timeouts count as killed)


def _copy_tree(name):
    """build/mutate/<name>/: the package, the tests and pytest.ini, fresh (an earlier run's mutants/ removed)."""
    work = os.path.join(BUILD, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc')
    # examples/: tests of the shipped sweep files read them beside tests/ (tests/sweepfile/test_sweepfile.py)
    for folder in (PACKAGE, 'tests', 'examples'):
        shutil.copytree(os.path.join(REPO, folder), os.path.join(work, folder), ignore=ignore)
    shutil.copy(os.path.join(REPO, 'pytest.ini'), work)
    # az finds the dev extension under test by its egg-info (tests/fixtures_az.py): mutmut's mutants/ gets it too,
    # so the az-driven tests of a selection load the mutated package, not fail
    for egg_info in glob.glob(os.path.join(REPO, '*.egg-info')):
        shutil.copytree(egg_info, os.path.join(work, os.path.basename(egg_info)))
    # the plugin that runs a mutant's tests fastest first (copied into mutants/, which is on the tests' sys.path)
    shutil.copy(os.path.join(REPO, 'scripts', ORDER_PLUGIN + '.py'), work)
    return work


def _config(files, tests, not_mutated=()):
    lines = ['[mutmut]', 'source_paths = {}'.format(PACKAGE), 'only_mutate =']
    lines += ['    {}/{}'.format(PACKAGE, f) for f in files]
    lines += ['also_copy ='] + ['    ' + os.path.basename(e) for e in glob.glob(os.path.join(REPO, '*.egg-info'))]
    lines += ['    {}.py'.format(ORDER_PLUGIN), '    examples']
    lines += ['pytest_add_cli_args_test_selection ='] + ['    ' + t for t in tests]
    # -x: a mutant is killed by its first failing test; no cache folder written into the copy
    # not the az-driven tests: mutmut maps a test to the functions it calls in its own process, never in az's, so
    # they would never run on a mutant, only slow the stats run (and az's interpreter may lack mutmut's trampoline)
    lines += ['pytest_add_cli_args =', '    -x', '    -q', '    -p', '    no:cacheprovider',
              '    -p', '    ' + ORDER_PLUGIN, '    -m', '    not az and not soak']
    # a mutant that loops (a bisection's bounds moved) is a timeout, so killed; 4x its tests' time, not mutmut's 15x,
    # or one such mutant waits minutes
    lines += ['timeout_multiplier = 4']
    if not_mutated:
        lines += ['do_not_mutate_patterns ='] + ['    ' + pattern for pattern in not_mutated]
    lines += ['']
    return '\n'.join(lines)


def _mutmut(work, *args, check=True):
    mutmut = os.path.join(os.path.dirname(sys.executable), 'mutmut')
    return subprocess.run([mutmut, *args], cwd=work, check=check, capture_output=True, text=True)


def run_module(name, children, resume=False, mutants=()):
    """mutmut run on one module in a fresh copy; `resume`: in the copy an earlier, stopped run left (mutmut keeps
    each mutant's result as it comes, and checks only those without one); `mutants`: only the mutants these name
    (mutmut's names or fnmatch patterns), checked again even if an earlier run did. mutmut runs a module's mutants
    cheapest first (by its stats run's test times), so a stopped run's unchecked ones are its slowest functions':
    naming them goes on with those first."""
    files, tests = MODULES[name]
    work = os.path.join(BUILD, name)
    if not (resume and os.path.isdir(os.path.join(work, 'mutants'))):
        work = _copy_tree(name)
        with open(os.path.join(work, 'setup.cfg'), 'w', encoding='utf-8') as f:
            f.write(_config(files, tests, NOT_MUTATED.get(name, ())))
    print('{}: mutmut run on {} with {}'.format(name, ', '.join(files), ' '.join(tests)), flush=True)
    env_children = ['--max-children', str(children)]
    mutmut = os.path.join(os.path.dirname(sys.executable), 'mutmut')
    ran = subprocess.run(['nice', '-n', '19', mutmut, 'run', *env_children, *mutants], cwd=work, check=False,
                         env=dict(os.environ, **HYPOTHESIS_ENV))
    if ran.returncode:
        print('{}: mutmut run exited {}'.format(name, ran.returncode), file=sys.stderr)
    return summarize(name)


@functools.lru_cache(maxsize=None)
def _functions(path):
    """{name: source} of every function of a mutated file (the original of each, and its mutants)."""
    with open(path, encoding='utf-8') as f:
        source = f.read()
    lines = source.splitlines(True)
    return {node.name: ''.join(lines[node.lineno - 1:node.end_lineno]).rstrip('\n')
            for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _diff(work, key):
    """A mutant's diff, read from the mutated copy's source as `mutmut show` prints it (which starts mutmut once per
    mutant: minutes for a module's survivors on a busy machine)."""
    module, _, function = key.rpartition('.')
    path = os.path.join(work, 'mutants', *module.split('.')) + '.py'
    if not os.path.exists(path):  # a package's __init__.py
        path = os.path.join(work, 'mutants', *module.split('.'), '__init__.py')
    try:
        found = _functions(path)
        original = found[function.rpartition('__mutmut_')[0] + '__mutmut_orig']
        mutated = found[function]
    except (OSError, KeyError, SyntaxError):
        return _mutmut(work, 'show', key).stdout
    mutated = mutated.replace(function, function.rpartition('__mutmut_')[0] + '__mutmut_orig', 1)
    return ''.join(difflib.unified_diff((original + '\n').splitlines(True), (mutated + '\n').splitlines(True),
                                        module, module, n=2))


def summarize(name):
    """build/mutate/<name>/summary.json from mutmut's results: counts, the kill rate, each survivor's diff."""
    files, tests = MODULES[name]
    work = os.path.join(BUILD, name)
    listed = _mutmut(work, 'results', '--all', 'true').stdout
    counts = dict.fromkeys(STATUSES, 0)
    survivors = []
    for line in listed.splitlines():
        key, _, status = line.strip().rpartition(': ')
        if not key:
            continue
        counts[status] = counts.get(status, 0) + 1
        if status in ALIVE:
            survivors.append({'mutant': key, 'status': status, 'diff': _diff(work, key)})
    tested = sum(counts[status] for status in ('killed', 'timeout', 'caught by type check') + ALIVE
                 if status in counts)
    summary = {'module': name, 'files': files, 'tests': tests, 'counts': counts,
               'killed_percent': round(100.0 * (counts['killed'] + counts['timeout']) / tested, 1) if tested else None,
               'survivors': survivors}
    with open(os.path.join(work, 'summary.json'), 'w', encoding='utf-8') as f:
        json.dump(summary, f, indent=1)
    print('{}: {} mutants, {} killed ({}%), {} survived, {} without a test'.format(
        name, tested, counts['killed'] + counts['timeout'], summary['killed_percent'], counts['survived'],
        counts['no tests']), flush=True)
    for survivor in survivors:
        print(survivor['diff'])
    return summary


def _forked_runner(mutants, tests):
    """run(mutant) -> pytest's exit code for the tests on that mutant, each in a child forked from this process
    once it has imported what the tests import (as mutmut runs its mutants): seconds per mutant, not the imports'
    tens of seconds each time on a busy machine."""
    os.nice(19)
    os.chdir(mutants)
    sys.path.insert(0, mutants)
    os.environ['MUTANT_UNDER_TEST'] = ''
    os.environ.update(HYPOTHESIS_ENV)  # before the tests' modules (and their settings) are imported
    import pytest  # pylint: disable=import-outside-toplevel
    # a copy made since mutate_order.py came in has it: the survivors' tests fastest first as in the run
    order = ['-p', ORDER_PLUGIN] if os.path.exists(ORDER_PLUGIN + '.py') else []
    # collect once here: the tests' modules (and what they import) are then in every child
    pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *tests], plugins=[])
    sys.stdout.flush()

    def run(mutant):
        pid = os.fork()
        if pid == 0:  # the child: its output is not wanted, its exit code is
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.environ['MUTANT_UNDER_TEST'] = mutant
            signal.alarm(RECHECK_TIMEOUT)  # a mutant that loops is a timeout: killed, as mutmut counts it
            os._exit(int(pytest.main(['-x', '-q', '-p', 'no:cacheprovider', *order, *tests])))  # pylint: disable=W0212
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return run


def recheck(name, only_tests=None, only_mutants=None):
    """Run each mutant an earlier run left alive (survived, no tests) against the checkout's tests as they are now,
    one pytest per mutant (mutmut's own switch, MUTANT_UNDER_TEST): the survivors new tests have killed, without
    running every mutant again. Updates summary.json's survivors with 'now': killed|survived."""
    files, tests = MODULES[name]
    tests = only_tests or tests
    work = os.path.join(BUILD, name)
    with open(os.path.join(work, 'summary.json'), encoding='utf-8') as f:
        summary = json.load(f)
    mutants = os.path.join(work, 'mutants')
    shutil.rmtree(os.path.join(mutants, 'tests'))
    shutil.copytree(os.path.join(REPO, 'tests'), os.path.join(mutants, 'tests'),
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    run = _forked_runner(mutants, tests) if hasattr(os, 'fork') else None
    for survivor in summary['survivors']:
        if only_mutants and not any(part in survivor['mutant'] for part in only_mutants):
            continue  # left as an earlier recheck found it
        if run is not None:
            returncode = run(survivor['mutant'])
        else:
            env = dict(os.environ, MUTANT_UNDER_TEST=survivor['mutant'], **HYPOTHESIS_ENV)
            returncode = subprocess.run(['nice', '-n', '19', sys.executable, '-m', 'pytest', '-x', '-q', '-p',
                                         'no:cacheprovider', *tests], cwd=mutants, env=env, capture_output=True,
                                        text=True, check=False).returncode
        survivor['now'] = 'survived' if returncode == 0 else 'killed'
        print('{}: {}'.format(survivor['mutant'], survivor['now']), flush=True)
    left = [s for s in summary['survivors'] if s.get('now', 'survived') == 'survived']
    summary['survivors_now'] = len(left)
    with open(os.path.join(work, 'summary.json'), 'w', encoding='utf-8') as f:
        json.dump(summary, f, indent=1)
    print('{}: {} of {} survivors still alive'.format(name, len(left), len(summary['survivors'])))
    for survivor in left:
        print(survivor['diff'])
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('modules', nargs='*', help='names from --list (default: all)')
    parser.add_argument('--list', action='store_true', help='list the modules and their tests')
    parser.add_argument('--recheck', action='store_true',
                        help="run an earlier run's survivors against the tests as they are now")
    parser.add_argument('--tests', nargs='+', metavar='TEST',
                        help='with --recheck: run these tests (the new ones) on each survivor, not the whole selection')
    parser.add_argument('--only', nargs='+', metavar='PART',
                        help="with --recheck: only the survivors whose name holds one of these (e.g. a function's "
                             'name), the others left as an earlier recheck found them')
    parser.add_argument('--resume', action='store_true',
                        help='go on with a stopped run (its mutants not yet checked) instead of starting afresh')
    parser.add_argument('--mutants', nargs='+', metavar='NAME',
                        help="run only these mutants (mutmut's names or patterns, e.g. '*.x_load_sweep_file__*')")
    args = parser.parse_args(argv)
    if args.list:
        for name, (files, tests) in MODULES.items():
            print('{:20} {:45} {}'.format(name, ', '.join(files), ' '.join(tests)))
        return 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error('unknown module(s) {}; --list shows them'.format(', '.join(unknown)))
    isolated = [m for m in args.modules or list(MODULES) if m in ISOLATED]
    if isolated and not os.environ.get('MUTATE_ISOLATED'):
        # this whole command again, in a PID namespace of its own (its mutants never see another process)
        if subprocess.run(ISOLATE + ['true'], capture_output=True, check=False).returncode:
            parser.error('{} must run in a PID namespace of its own ({}: needs root), which cannot be made '
                         'here: a mutant of its process-group kills could reach any process of the machine'.format(
                             ', '.join(isolated), ' '.join(ISOLATE)))
        # bash is the namespace's first process: it reaps the processes that a test leaves behind (a job's
        # `sleep &`) once their parent is gone, which would otherwise stay zombies (thousands in a runner run).
        command = [sys.executable, os.path.abspath(__file__), *(argv if argv is not None else sys.argv[1:])]
        return subprocess.run(ISOLATE + ['bash', '-c', '"$@"; exit $?', 'mutate'] + command,
                              env=dict(os.environ, MUTATE_ISOLATED='1'), check=False).returncode
    children = int(os.environ.get('MUTATE_CHILDREN', '1'))
    for name in args.modules or list(MODULES):
        if args.recheck:
            recheck(name, args.tests, args.only)
        else:
            run_module(name, children, resume=args.resume, mutants=args.mutants or ())
    return 0


if __name__ == '__main__':
    sys.exit(main())
