"""`sweep run`'s sweep-file errors through the real az (issue 27, item 5): each names the key, what was found and
what is allowed, and points to `run -h`, which documents every section (objective, limits, earlyTermination,
sampling) with an example. Checked offline with --plan-only: no service is needed to find them."""
import re

import pytest

from tests.tuning.run_helpers import write_sweep

pytestmark = pytest.mark.az


def plan(az, tmp_path, sections, objective=None):
    extra = {'objective': objective} if objective else {}
    spec = write_sweep(str(tmp_path), 's', sections, [0.1, 0.2], epochs=3, **extra)
    return az('batchai', 'sweep', 'run', '-g', 'g', '-w', 'w', '-e', 'e', '-n', 's', '--spec', spec, '--plan-only')


def error_of(result):
    assert result.exit_code != 0 and 'Traceback' not in result.stderr, result.stderr
    return ' '.join(line for line in result.stderr.splitlines() if 'preview' not in line)


@pytest.mark.parametrize('settings, found', [
    ('{policy: bandit, delayEvaluation: 5}', 'got neither'),
    ('{policy: bandit, slackFactor: 0.1, slackAmount: 0.2}', 'got both slackAmount and slackFactor'),
])
def test_bandit_slack_errors_say_which_fields_and_what_each_means(az, tmp_path, settings, found):
    message = error_of(plan(az, tmp_path, ['earlyTermination: ' + settings]))
    assert 'earlyTermination: expected exactly one of slackFactor (the slack as a ratio' in message
    assert 'and slackAmount (the slack as a difference' in message and found in message
    assert 'alternative' not in message and 'oneOf' not in message
    assert '"az batchai sweep run -h" documents every section of the sweep file (earlyTermination)' in message


@pytest.mark.parametrize('sections, objective, key, found, allowed', [
    (['limits: {maxConcurentJobs: 3}'], None, 'limits.maxConcurentJobs',
     "the unknown field 'maxConcurentJobs' (did you mean maxConcurrentJobs?)", 'only the fields jobTimeoutMinutes'),
    ([], '{metric: val_accuracy, goal: maximize}', 'objective.goal', "the string 'maximize'", "one of 'max', 'min'"),
    (['sampling: {type: hyperband, resource: EPOCHS, minResource: 1, maxResource: 2, eta: 3}'], None,
     'sampling.maxResource', None, 'a maxResource of at least minResource * eta (3)'),
])
def test_run_errors_name_key_found_allowed_and_the_section_of_run_help(az, tmp_path, sections, objective, key, found,
                                                                       allowed):
    message = error_of(plan(az, tmp_path, sections, objective))
    assert key + ': expected ' + allowed in message
    if found:
        assert 'got ' + found in message
    section = key.split('.')[0]
    assert '"az batchai sweep run -h" documents every section of the sweep file ({})'.format(section) in message


def test_run_help_documents_every_section_with_an_example(az):
    result = az('batchai', 'sweep', 'run', '-h')
    assert result.exit_code == 0
    text = re.sub(r'\s+', ' ', result.stdout)
    for section, example in (('objective', 'objective: {metric: val_accuracy, goal: max, step: epoch}'),
                             ('limits', 'limits: {maxTotalJobs: 30, maxConcurrentJobs: 4'),
                             ('earlyTermination', 'earlyTermination: {policy: bandit, slackFactor: 0.1'),
                             ('sampling', 'sampling: {type: hyperband, resource: EPOCHS')):
        assert ' {}: '.format(section) in text, section
        assert 'Example: ' + example in text, section
    assert '--plan-only --validate-only' in result.stdout and '--strict' in result.stdout


def test_create_errors_in_a_tuning_section_point_to_run_help_which_documents_it(az, tmp_path):
    # create reads objective (and limits.jobTimeoutMinutes) too; `create -h` does not document them, `run -h` does.
    spec = write_sweep(str(tmp_path), 'c', [], [0.1, 0.2], epochs=3, objective='{metric: val_accuracy, goal: up}')
    result = az('batchai', 'sweep', 'create', '-g', 'g', '-w', 'w', '-e', 'e', '-n', 'c', '--spec', spec,
                '--plan-only')
    message = error_of(result)
    assert "objective.goal: expected one of 'max', 'min', got the string 'up'" in message
    assert '"az batchai sweep run -h" documents every section of the sweep file (objective)' in message
