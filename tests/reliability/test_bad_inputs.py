"""The bad-input corpus (bad_inputs/cases.yaml) through az's own entry point, and a few through the real executable.

Every case: the exit code and azclierror class it should give, one ERROR line naming the file, the field path and
what is expected there, no traceback, and nothing changed on the service the commands are pointed at.

The corpus runs in one az process (tests/reliability/az_inprocess.py): the same code path as the executable (az's
parser, validators, command, exception handler), without a second of start-up per case; a handful of cases also
run through the real `az` to show the two agree.
"""
import json
import uuid

import pytest
from azure.core.exceptions import ResourceNotFoundError

from tests.fixtures_az import AzRunner, service_env

from .az_inprocess import run_many
from .corpus import argv, load_cases, prepare

CASES = load_cases()
# Through the real executable too: a YAML error, a schema error, an argument check, a file error, a warning.
EXECUTABLE_CASES = ['yaml-unclosed-flow', 'start-greater-than-end', 'sweep-name-bad-characters', 'spec-missing',
                    'larger-than-max-jobs-default', 'parameter-without-placeholder']
DEFAULT_ARGS = ['-c', 'local']
SUBMIT_CASES = [case for case in CASES if case['command'] == 'create' and case['exit'] != 0]


@pytest.fixture(scope='module')
def corpus_experiment():
    return 'bad-corpus-' + uuid.uuid4().hex[:8]


@pytest.fixture(scope='module')
def corpus_results(local_service, tmp_path_factory, corpus_experiment):
    """Run every case once, in one az process pointed at the session's local service."""
    root = tmp_path_factory.mktemp('bad-inputs')
    runs = []
    for case in CASES:
        workdir = str(root / case['id'])
        spec = prepare(case, workdir)
        # The accepted inputs (warnings only) create their experiment: a separate one.
        experiment = corpus_experiment if case['exit'] else corpus_experiment + '-accepted'
        runs.append({'argv': argv(case, spec, experiment=experiment, resource_group=local_service.resource_group,
                                  workspace=local_service.workspace), 'cwd': workdir})
    results = run_many(runs, str(root / 'azure-config'), env=service_env(local_service))
    return dict(zip((case['id'] for case in CASES), results))


def check(case, result):
    stderr = result['stderr']
    assert 'Traceback' not in stderr + result['stdout'], stderr
    assert result['exit_code'] == case['exit'], stderr
    assert result['error_class'] == case['error'], stderr
    errors = [line for line in stderr.splitlines() if line.startswith('ERROR:')]
    if case['exit'] == 0:
        assert errors == [], stderr
    else:
        assert len(errors) == 1, stderr
        if case['where']:
            assert case['where'] in errors[0], errors[0]
        if case['expect']:
            assert case['expect'] in errors[0], errors[0]
    if case['warning']:
        assert any(line.startswith('WARNING:') and case['warning'] in line for line in stderr.splitlines()), stderr


def test_the_corpus_is_big_enough():
    assert len([case for case in CASES if case['exit'] != 0]) >= 40


@pytest.mark.service
@pytest.mark.parametrize('case', CASES, ids=[case['id'] for case in CASES])
def test_bad_input(case, corpus_results):
    check(case, corpus_results[case['id']])


@pytest.mark.service
def test_the_corpus_changed_nothing_on_the_service(corpus_results, batchai_client, local_service, corpus_experiment):
    assert corpus_results  # every case has run
    with pytest.raises(ResourceNotFoundError):
        batchai_client.experiments.get(local_service.resource_group, local_service.workspace, corpus_experiment)


@pytest.mark.az
@pytest.mark.parametrize('case_id', EXECUTABLE_CASES)
def test_bad_input_through_the_az_executable(case_id, az, tmp_path, corpus_results, local_service,
                                            corpus_experiment):
    case = next(case for case in CASES if case['id'] == case_id)
    az = AzRunner(az.config_dir, cwd=az.cwd, executable=True)  # the executable, not a forked run (tests/az_fork.py)
    spec = prepare(case, str(tmp_path))
    experiment = corpus_experiment if case['exit'] else corpus_experiment + '-accepted'
    result = az(*argv(case, spec, experiment=experiment, resource_group=local_service.resource_group,
                      workspace=local_service.workspace), env=service_env(local_service))
    assert result.exit_code == case['exit'], result.stderr
    assert 'Traceback' not in result.stderr
    # The executable prints what the in-process run printed (paths aside: each ran in its own directory).
    in_process = corpus_results[case_id]['stderr'].replace(str(tmp_path), '')
    assert [line for line in result.stderr.splitlines() if line.startswith(('ERROR:', 'WARNING: Param'))] == \
        [line for line in in_process.splitlines() if line.startswith(('ERROR:', 'WARNING: Param'))]


def _submit_available(config_dir):
    probe = run_many([{'argv': ['batchai', 'sweep', 'submit', '-h']}], config_dir)[0]
    return probe['exit_code'] == 0


@pytest.mark.service
def test_submit_refuses_the_bad_sweep_files_before_any_request(local_service, batchai_client, tmp_path):
    """The same bad sweep files given to `submit --spec`: refused with the same message, nothing created."""
    config_dir = str(tmp_path / 'azure-config')
    if not _submit_available(config_dir):
        pytest.skip('az batchai sweep submit is not implemented yet')
    experiment = 'bad-submit-' + uuid.uuid4().hex[:8]
    runs, cases = [], []
    for case in SUBMIT_CASES:
        if case['args'] != DEFAULT_ARGS:
            continue  # bad because of an option, not of the sweep file
        submit_case = dict(case, command='submit')
        workdir = str(tmp_path / case['id'])
        spec = prepare(case, workdir)
        runs.append({'argv': argv(submit_case, spec, experiment=experiment, resource_group=local_service.resource_group,
                                  workspace=local_service.workspace), 'cwd': workdir})
        cases.append(case)
    results = run_many(runs, config_dir, env=service_env(local_service))
    failures = []
    for case, result in zip(cases, results):
        if result['exit_code'] == 0 or 'Traceback' in result['stderr'] or \
                (case['expect'] and case['expect'] not in result['stderr'] and 'max-jobs' not in case['expect']):
            failures.append((case['id'], result['exit_code'], result['stderr'][-600:]))
    assert failures == [], json.dumps(failures, indent=1)
    with pytest.raises(ResourceNotFoundError):
        batchai_client.experiments.get(local_service.resource_group, local_service.workspace, experiment)
