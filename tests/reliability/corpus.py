"""The bad-input corpus of bad_inputs/cases.yaml: loading it and turning a case into an az command line."""
import os
import shutil

import yaml

from azext_batchai_sweep._exit_codes import BAD_INPUT

CORPUS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bad_inputs')
# What {{P}} and {{JOB}} stand for in a case's text: a valid parameter list and a valid job using it.
VALID_PARAMETERS = 'parameters:\n  - {name: LR, type: discrete, values: [1, 2, 3]}\n'
VALID_JOB = "job: {nodeCount: 1, customToolkitSettings: {commandLine: 'echo {{LR}}'}}\n"
BASE = ['batchai', 'sweep']


def load_cases():
    with open(os.path.join(CORPUS_DIR, 'cases.yaml'), encoding='utf-8') as f:
        corpus = yaml.safe_load(f)
    defaults = corpus['defaults']
    cases = []
    for entry in corpus['cases']:
        case = {'exit': BAD_INPUT, 'error': 'InvalidArgumentValueError', 'where': None, 'expect': None, 'warning': None,
                **defaults, **entry}
        cases.append(case)
    ids = [case['id'] for case in cases]
    assert len(ids) == len(set(ids)), 'duplicate case ids in cases.yaml'
    return cases


def prepare(case, workdir):
    """Copy the corpus files into `workdir` and write the case's sweep.yaml; returns the --spec argument."""
    os.makedirs(workdir, exist_ok=True)
    for name in os.listdir(CORPUS_DIR):
        source = os.path.join(CORPUS_DIR, name)
        if name == 'cases.yaml':
            continue
        target = os.path.join(workdir, name)
        if os.path.isdir(source):
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy(source, target)
    if 'text' in case:
        text = case['text'].replace('{{P}}', VALID_PARAMETERS).replace('{{JOB}}', VALID_JOB)
        with open(os.path.join(workdir, 'sweep.yaml'), 'w', encoding='utf-8') as f:
            f.write(text)
        return 'sweep.yaml'
    return case['spec']


def argv(case, spec, experiment='exp', resource_group='rg', workspace='ws'):
    """The az arguments of a case (without the leading `az`)."""
    command = case['command']
    args = [*BASE, command, '-g', resource_group, '-w', workspace, '-e', experiment, '-n', case['name']]
    if command in ('create', 'submit'):
        args += ['--spec', spec]
    return args + [str(a) for a in case['args']]
