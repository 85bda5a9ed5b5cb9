"""azdev linter's rules for every `batchai sweep` command and parameter, checked without azdev (`make lint` runs azdev
itself; this keeps the rules in `make test`).

The command table, arguments and help come from azure-cli-core (tests/cli/command_table.py, in its own process with
a temporary AZURE_CONFIG_DIR and the extension from AZURE_EXTENSION_DEV_SOURCES). Exceptions are linter_exclusions.yml,
in azdev's format: `{command or group: {rule_exclusions: [rule], parameters: {dest: {rule_exclusions: [rule]}}}}`.
"""
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.fixtures_az import REPO_ROOT, base_env, dev_sources

LONG_OPTION_LIMIT = 22  # azdev's option_length_too_long threshold
# Arguments az adds to every command; their help and options are az's own.
AZ_GLOBAL = {'cmd', '_subscription', 'ids'}


@pytest.fixture(scope='module')
def table(tmp_path_factory):
    config_dir = str(tmp_path_factory.mktemp('azure-config'))
    env = base_env(config_dir, {'AZURE_EXTENSION_DEV_SOURCES': dev_sources()})
    proc = subprocess.run([sys.executable, '-m', 'tests.cli.command_table'], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout)
    # The 10 commands of 0.1.1, plus stop (0.2.0), run, report and local show-connection-string.
    assert sorted(loaded['commands']) == sorted('batchai sweep ' + name for name in (
        'create', 'submit', 'status', 'resubmit', 'metrics', 'delete', 'download', 'stop', 'run', 'report',
        'local start', 'local status', 'local stop', 'local show-connection-string'))
    return loaded


@pytest.fixture(scope='module')
def exclusions():
    with open(os.path.join(REPO_ROOT, 'linter_exclusions.yml'), encoding='utf-8') as f:
        return yaml.safe_load(f) or {}


def excluded(exclusions, rule, command, dest=None):
    """Whether `rule` is excluded for the command (or one of its groups), or for its parameter `dest`."""
    words = command.split()
    for length in range(len(words), 0, -1):
        entry = exclusions.get(' '.join(words[:length])) or {}
        if rule in (entry.get('rule_exclusions') or ()):
            return True
        if dest and length == len(words):
            if rule in (((entry.get('parameters') or {}).get(dest) or {}).get('rule_exclusions') or ()):
                return True
    return False


def own_arguments(command):
    return {dest: arg for dest, arg in command['arguments'].items() if dest not in AZ_GLOBAL and not arg['hidden']}


def test_every_command_and_group_has_help(table, exclusions):
    missing = [name for name, command in table['commands'].items()
               if not command['summary'].strip() and not excluded(exclusions, 'missing_command_help', name)]
    missing += [name for name, group in table['groups'].items()
                if not group['summary'].strip() and not excluded(exclusions, 'missing_group_help', name)]
    assert missing == []


def test_every_command_has_examples_that_run_it_with_its_own_options(table, exclusions):
    problems = []
    for name, command in table['commands'].items():
        if excluded(exclusions, 'missing_command_example', name):
            continue
        if not command['examples']:
            problems.append('{}: no example'.format(name))
        for example in command['examples']:
            if 'az ' + name not in example['text']:  # azdev's faulty_help_example_rule
                problems.append('{}: example {!r} does not run it'.format(name, example['name']))
            # Each `az batchai sweep ...` line of the example (some show a whole session) against its own command.
            for line in example['text'].splitlines():
                ran = max((other for other in table['commands'] if re.match(
                    r'\s*az {}(\s|$)'.format(re.escape(other)), line)), key=len, default=None)
                unknown = sorted(_options_used(line) - _known_options(table['commands'][ran])) if ran else []
                if unknown:
                    problems.append('{}: example {!r} gives {} unknown options {}'.format(
                        name, example['name'], ran, unknown))
    assert problems == []


def _options_used(line):
    return set(re.findall(r'(?<=\s)(--[a-z][a-z0-9-]*|-[a-zA-Z])(?=[\s=]|$)', line))


def _known_options(command):
    options = {option for arg in command['arguments'].values() for option in arg['options']}
    return options | {'--output', '-o', '--query', '--debug', '--verbose', '--only-show-errors', '--help', '-h'}


def test_every_parameter_has_help(table, exclusions):
    missing = ['{} {}'.format(name, arg['options'] or dest)
               for name, command in table['commands'].items() for dest, arg in own_arguments(command).items()
               if not arg['help'].strip() and not excluded(exclusions, 'missing_parameter_help', name, dest)]
    assert missing == []


def test_short_options_are_one_character(table, exclusions):
    bad = ['{} {}'.format(name, option)
           for name, command in table['commands'].items() for dest, arg in own_arguments(command).items()
           for option in arg['options']
           if not option.startswith('--') and len(option) != 2
           and not excluded(exclusions, 'bad_short_option', name, dest)]
    assert bad == []


def test_long_options_are_short_enough_or_have_an_alias(table, exclusions):
    too_long = []
    for name, command in table['commands'].items():
        for dest, arg in own_arguments(command).items():
            lengths = [len(option.lstrip('-')) for option in arg['options']]
            if lengths and min(lengths) > LONG_OPTION_LIMIT and \
                    not excluded(exclusions, 'option_length_too_long', name, dest):
                too_long.append('{} {}'.format(name, arg['options']))
    assert too_long == []


def test_options_are_kebab_case_and_named(table, exclusions):
    bad = ['{} {}'.format(name, arg['options'] or dest)
           for name, command in table['commands'].items() for dest, arg in own_arguments(command).items()
           if (not arg['options'] or any('_' in option for option in arg['options']))
           and not excluded(exclusions, 'no_positional_parameters', name, dest)]
    assert bad == []


def test_no_wait_only_with_a_way_to_wait(table, exclusions):
    """A command with --no-wait needs a `wait` command in its group, or an explained exclusion."""
    bad = []
    for name, command in table['commands'].items():
        has_no_wait = command['supports_no_wait'] or any(
            '--no-wait' in arg['options'] for arg in command['arguments'].values())
        group = name.rsplit(' ', 1)[0]
        if has_no_wait and group + ' wait' not in table['commands'] and \
                not excluded(exclusions, 'require_wait_command_if_no_wait', group):
            bad.append(name)
    assert bad == []


def test_documented_options_exist(table):
    """Every option the help documents is one the command takes (az silently drops `no_wait` from a command's
    function unless the command declares supports_no_wait: `delete --no-wait` was documented but refused)."""
    assert table['commands']['batchai sweep delete']['supports_no_wait']
    assert '--no-wait' in table['commands']['batchai sweep delete']['arguments']['no_wait']['options']


def test_the_docs_run_usage_lists_exactly_the_options_run_takes(table):
    """The usage line of `sweep run` in its reference page (docs/sweep-run.md, the README's before it became a front
    door) promises its options (issue 32: it said "create's options", and run refused --plan-file): every option it
    names is one run takes, and every option of run is named."""
    with open(os.path.join(REPO_ROOT, 'docs', 'sweep-run.md'), encoding='utf-8') as f:
        text = f.read()
    usage = re.search(r'\n    az batchai sweep run -g .*?\n(?:        .*\n)*', text).group(0)
    documented = set(re.findall(r'(?<![\w-])--[a-z][a-z-]*', usage))
    arguments = table['commands']['batchai sweep run']['arguments'].values()
    taken = {option for argument in arguments if not argument['hidden'] for option in argument['options']
             if option.startswith('--')}
    # Shown by their short forms (-g -w -e -n -c), or az's own on every command.
    implied = {'--resource-group', '--workspace', '--experiment', '--name', '--cluster', '--subscription'}
    assert documented - taken == set()
    assert taken - implied - documented == set()
