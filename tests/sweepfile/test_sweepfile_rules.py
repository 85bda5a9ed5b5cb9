"""The sweep file loader's rules one at a time (what `make mutate`'s run of core/spec/sweepfile.py found untested):
where an error points for each of the job's forms, the parameter names, the storage account placeholder's place,
the note on sample values."""
import json
import logging

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file

PARAMS = [{'name': 'LR', 'type': 'discrete', 'values': [0.1, 0.01]},
          {'name': 'D', 'type': 'dict', 'values': [{'a': 1}]}]
TOOLKIT = {'customToolkitSettings': {'commandLine': 'python train.py {{LR}} {{D}}'}}


def write_json(tmp_path, name, document):
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding='utf-8')
    return str(path)


def load_error(path, **kwargs):
    with pytest.raises(SpecError) as info:
        load_sweep_file(path, cluster_id='c', **kwargs)
    return info.value


def job_forms(tmp_path, properties):
    """(sweep file, file the error names, path prefix of the job's properties there) for each way to give a job."""
    wrapped = {'$schema': 'x', 'properties': properties}
    yield write_json(tmp_path, 'inline.json', {'parameters': PARAMS, 'job': properties}), 'inline.json', 'job.'
    yield (write_json(tmp_path, 'inline-wrapped.json', {'parameters': PARAMS, 'job': wrapped}), 'inline-wrapped.json',
           'job.properties.')
    write_json(tmp_path, 'job.json', properties)
    yield write_json(tmp_path, 'file.json', {'parameters': PARAMS, 'job': 'job.json'}), 'job.json', ''
    write_json(tmp_path, 'job-wrapped.json', wrapped)
    yield (write_json(tmp_path, 'file-wrapped.json', {'parameters': PARAMS, 'job': 'job-wrapped.json'}),
           'job-wrapped.json', 'properties.')


@pytest.mark.parametrize('name', ['LR\n', 'LR\n\n', 'lr', '1LR', 'L-R'])
@pytest.mark.parametrize('index', [0, 1])
def test_a_parameter_name_that_is_not_capitals_digits_and_underscores_is_refused_at_its_name(tmp_path, name,
                                                                                             index):
    # A name ending in a newline passed both the schema's pattern and params.py's (`$` matches before a final
    # newline in Python): the job got PARAM_LR\n.
    parameters = [dict(PARAMS[0], name='A'), dict(PARAMS[0], name='B')]
    parameters[index]['name'] = name
    path = write_json(tmp_path, 'sweep.json', {'parameters': parameters, 'job': {'nodeCount': 1, **TOOLKIT}})
    error = load_error(path)
    assert (error.source, error.path) == (path, 'parameters[{}].name'.format(index))
    assert str(error).startswith('{}: parameters[{}].name: '.format(path, index))


@pytest.mark.parametrize('variables, words', [
    ([{'name': 'BATCHAI_SWEEP_NAME', 'value': 'x'}], 'environment variable BATCHAI_SWEEP_NAME is set by the sweep'),
    ([{'name': 'PARAM_LR', 'value': 'x'}], 'environment variable PARAM_LR is set by the sweep'),
    ({'A': '1'}, 'must be a list of {"name": ..., "value": ...}'),
])
def test_an_environment_error_points_at_the_jobs_environment_variables_in_each_form_of_job(tmp_path, variables,
                                                                                           words):
    # A wrapped job's error named `environmentVariables` next to `properties`, where the user never wrote it.
    for path, source, prefix in job_forms(tmp_path, {'nodeCount': 1, 'environmentVariables': variables, **TOOLKIT}):
        error = load_error(path)
        assert (error.source, error.path) == (str(tmp_path / source), prefix + 'environmentVariables')
        assert error.message.startswith(words)


@pytest.mark.parametrize('command, words', [
    ('python train.py {{LR}} {{NOPE}}', "unknown parameter 'NOPE' in a placeholder (parameters: LR, D)"),
    ('python train.py {{LR}} {{D.b}}', "parameter 'D' has no key 'b'"),
    ('python train.py {{LR.a}} {{D}}', "parameter 'LR' has no key 'a'"),
])
def test_a_placeholder_error_points_at_its_field_in_each_form_of_job(tmp_path, command, words):
    properties = {'nodeCount': 1, 'customToolkitSettings': {'commandLine': command}}
    for path, source, prefix in job_forms(tmp_path, properties):
        error = load_error(path)
        assert (error.source, error.path) == (str(tmp_path / source), prefix + 'customToolkitSettings.commandLine')
        assert error.message == words


@pytest.mark.parametrize('where', [('inputDirectories', 0, 'path'), ('mountVolumes', 'azureFileShares', 0,
                                                                      'azureFileUrl')])
def test_a_storage_account_placeholder_without_a_name_is_refused_at_its_first_place(tmp_path, monkeypatch, where):
    monkeypatch.delenv('AZURE_BATCHAI_STORAGE_ACCOUNT', raising=False)
    properties = {'nodeCount': 1, 'schedulingPriority': 'normal', **TOOLKIT,
                  'inputDirectories': [{'id': 'DATA', 'path': '$AZ_BATCHAI_MOUNT_ROOT/data'}],
                  'mountVolumes': {'azureFileShares': [
                      {'azureFileUrl': 'https://acct.file.core.windows.net/share', 'relativeMountPath': 'afs'}]}}
    node = properties
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = node[where[-1]].replace('acct', '<AZURE_BATCHAI_STORAGE_ACCOUNT>').replace(
        '$AZ_BATCHAI_MOUNT_ROOT', '$AZ_BATCHAI_MOUNT_ROOT/<AZURE_BATCHAI_STORAGE_ACCOUNT>')
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': properties})
    error = load_error(path)
    assert (error.source, error.path) == (path, 'job.' + '.'.join(
        '[{}]'.format(part) if isinstance(part, int) else part for part in where).replace('.[', '['))
    assert error.message.startswith('expected a storage account name for <AZURE_BATCHAI_STORAGE_ACCOUNT>')
    assert load_sweep_file(path, cluster_id='c', storage_account_name='mine').template is not None


def test_a_schema_error_on_a_placeholder_says_the_value_checked_was_a_sample_and_only_then(tmp_path):
    # On a field as written with a placeholder, the message says so; on a plain value (a number, a string), not.
    path = write_json(tmp_path, 'a.json', {'parameters': PARAMS, 'job': {'nodeCount': '{{LR}}', **TOOLKIT}})
    error = load_error(path)
    assert error.path == 'job.nodeCount'
    assert error.message.endswith("(with the placeholders of '{{LR}}' replaced by sample values)")
    for value in (7, 'urgent'):
        path = write_json(tmp_path, 'b.json', {'parameters': PARAMS,
                                               'job': {'nodeCount': 1, 'schedulingPriority': value, **TOOLKIT}})
        error = load_error(path)
        assert error.path == 'job.schedulingPriority'
        assert 'sample values' not in error.message and 'placeholders' not in error.message


def environment(job):
    return {item['name']: item['value'] for item in json.loads(job.body_json())['properties']['environmentVariables']}


@pytest.mark.parametrize('sampling, parameter, seed', [
    ({'type': 'random', 'count': 3, 'seed': 42}, {'name': 'LR', 'type': 'discrete', 'values': [1, 2, 3, 4]}, '42'),
    ({'type': 'grid'}, {'name': 'LR', 'type': 'numeric', 'dataType': 'REAL', 'start': 0, 'end': 1,
                                   'numValues': 3, 'scale': 'RANDOM_UNIFORM'}, '7'),
    ({'type': 'grid'}, {'name': 'LR', 'type': 'discrete', 'values': [1, 2, 3]}, None),
    (None, {'name': 'LR', 'type': 'discrete', 'values': [1, 2, 3]}, None),
])
def test_every_job_carries_the_seed_when_the_sweep_draws_and_its_prefix_and_sweep_name(tmp_path, sampling, parameter,
                                                                                        seed):
    # The seed goes into each job so that a sweep can be planned again from the service alone; a grid that draws
    # nothing has no seed, even one given (--seed 7 here).
    document = {'jobNamePrefix': 'pre', 'parameters': [parameter],
                'job': {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'x {{LR}}'}}}
    if sampling:
        document['sampling'] = sampling
    definition = load_sweep_file(write_json(tmp_path, 'sweep.json', document), cluster_id='c',
                                 seed=None if sampling and 'seed' in sampling else 7)
    jobs = list(definition.jobs(sweep_name='sw'))
    assert len(jobs) == 3
    for job in jobs:
        variables = environment(job)
        assert variables.get('BATCHAI_SWEEP_SEED') == seed
        assert variables['BATCHAI_SWEEP_NAME'] == 'sw'
        assert job.name.startswith('pre-')
    assert all(job.name.startswith('other-') for job in definition.jobs(sweep_name='sw', job_name_prefix='other'))
    definition.job_name_prefix = None
    assert all(job.name.startswith('sw-') for job in definition.jobs(sweep_name='sw'))


def test_a_random_search_larger_than_its_space_is_refused_at_its_count(tmp_path):
    path = write_json(tmp_path, 'sweep.json', {
        'sampling': {'type': 'random', 'count': 3, 'seed': 1},
        'parameters': [{'name': 'LR', 'type': 'discrete', 'values': [1, 2]}],
        'job': {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'x {{LR}}'}}})
    with pytest.raises(SpecError) as info:
        load_sweep_file(path, cluster_id='c').jobs(sweep_name='sw')
    assert (info.value.source, info.value.path) == (path, 'sampling.count')
    assert 'a random search of 3 jobs needs as many distinct parameter sets' in info.value.message


@pytest.mark.parametrize('code, expected', [
    ('src', ['src']), ('./a/../src/', ['src']), ('../elsewhere', ['..', 'elsewhere']), (None, None)])
def test_the_code_folder_is_read_against_the_sweep_files_folder(tmp_path, monkeypatch, code, expected):
    folder = tmp_path / 'sweeps'
    folder.mkdir()
    document = {'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT}}
    if code is not None:
        document['code'] = code
    write_json(folder, 'sweep.json', document)
    monkeypatch.chdir(tmp_path)  # a relative sweep file path: still its own folder, not the working one
    definition = load_sweep_file('sweeps/sweep.json', cluster_id='c')
    assert definition.code == (None if expected is None else str(folder.joinpath(*expected).resolve()))


@pytest.mark.parametrize('sources, index, words', [
    (['old', 'old'], 1, 'expected each warm-start source once (old is given twice)'),
    (['old', 'new', 'results.json', 'new'], 3, 'expected each warm-start source once (new is given twice)'),
    (['old', 'missing.json'], 1, 'missing.json: expected a readable warm-start results file'),
])
def test_a_warm_start_source_given_twice_or_unreadable_is_refused_at_its_entry(tmp_path, sources, index, words):
    (tmp_path / 'results.json').write_text('[]', encoding='utf-8')
    path = write_json(tmp_path, 'sweep.json', {
        'sampling': {'type': 'bayesian', 'count': 4, 'seed': 1, 'warmStart': sources},
        'objective': {'metric': 'loss', 'goal': 'min'},
        'parameters': [{'name': 'LR', 'type': 'numeric', 'dataType': 'REAL', 'start': 0.1, 'end': 1,
                        'scale': 'LINEAR'}],
        'job': {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'x {{LR}}'}}})
    with pytest.raises(SpecError) as info:
        load_sweep_file(path, cluster_id='c', adaptive=True)
    assert (info.value.source, info.value.path) == (path, 'sampling.warmStart[{}]'.format(index))
    assert words in info.value.message
    if 'twice' in words:
        assert info.value.message == words


def test_a_job_that_runs_nothing_or_has_an_unknown_field_is_refused_at_its_place_in_each_form(tmp_path):
    # containerSettings is no toolkit: a job must say what it runs.
    for path, source, prefix in job_forms(tmp_path, {'nodeCount': 1, 'containerSettings': {
            'imageSourceRegistry': {'image': 'ubuntu'}}}):
        error = load_error(path)
        assert (error.source, error.path) == (str(tmp_path / source), prefix.rstrip('.') or None)
        assert error.message.startswith('expected a Batch AI job with one of ')
        assert error.message.endswith(' (what the job runs)')
        named = error.message[len('expected a Batch AI job with one of '):-len(' (what the job runs)')].split(', ')
        assert 'customToolkitSettings' in named and 'cntkSettings' in named and 'containerSettings' not in named
        assert named == sorted(named)
    for path, source, prefix in job_forms(tmp_path, {'nodeCount': 1, 'zeta': 1, 'nodeCnt': 2, **TOOLKIT}):
        error = load_error(path)
        assert (error.source, error.path) == (str(tmp_path / source), prefix + 'nodeCnt')
        assert error.message.startswith('expected only the fields of a Batch AI job (')
        assert error.message.endswith("), got the unknown field 'nodeCnt'")
        fields = error.message[len('expected only the fields of a Batch AI job ('):].split('), got')[0].split(', ')
        assert {'nodeCount', 'cluster', 'customToolkitSettings', 'environmentVariables'} <= set(fields)
        assert fields == sorted(fields) and 'nodeCnt' not in fields


def test_a_job_with_fields_beside_its_properties_or_not_a_mapping_or_none_is_refused(tmp_path):
    path = write_json(tmp_path, 'none.json', {'parameters': PARAMS})
    error = load_error(path)
    assert (error.source, error.path) == (path, 'job')
    assert error.message == ('expected a job: a path to a job.json, or the job inline (or a template on the command '
                             'line)')
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': {
        'properties': {'nodeCount': 1, **TOOLKIT}, 'name': 'x', 'location': 'y', '$schema': 'z'}})
    error = load_error(path)
    assert (error.source, error.path) == (path, 'job.location')
    assert error.message == "expected only $schema and properties next to the job's properties"
    job = write_json(tmp_path, 'job.json', [{'nodeCount': 1}])
    error = load_error(write_json(tmp_path, 'file.json', {'parameters': PARAMS, 'job': 'job.json'}))
    assert (error.source, error.path, error.message) == (job, None, 'expected a job definition (a mapping)')
    error = load_error(write_json(tmp_path, 'file.json', {'parameters': PARAMS}),
                       template_path=job)
    assert (error.source, error.path, error.message) == (job, None, 'expected a job definition (a mapping)')


def test_an_azure_file_shares_account_is_read_from_its_url_unless_given(tmp_path):
    shares = [{'azureFileUrl': 'https://acct1.file.core.windows.net/share', 'relativeMountPath': 'a'},
              {'azureFileUrl': 'https://acct2.file.core.windows.net/share', 'relativeMountPath': 'b',
               'accountName': 'given'}]
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': {
        'nodeCount': 1, 'mountVolumes': {'azureFileShares': shares}, **TOOLKIT}})
    template = load_sweep_file(path, cluster_id='c').template
    assert [share['accountName'] for share in template['mountVolumes']['azureFileShares']] == ['acct1', 'given']


@pytest.mark.parametrize('sampling, seed, recorded, origin, expected, asked', [
    ({'type': 'random', 'count': 2, 'seed': 5}, None, 9, 'given', 5, False),
    ({'type': 'random', 'count': 2}, 6, 9, 'given', 6, False),
    ({'type': 'random', 'count': 2}, None, 9, 'recorded', 9, True),
    ({'type': 'random', 'count': 2}, None, None, 'drawn', None, True),
    ({'type': 'grid'}, 6, 9, None, None, False),
])
def test_the_seed_is_given_recorded_or_drawn_and_only_when_the_sweep_draws(tmp_path, sampling, seed, recorded, origin,
                                                                          expected, asked):
    calls = []

    def recorded_seed():
        calls.append(1)
        return recorded
    path = write_json(tmp_path, 'sweep.json', {'sampling': sampling, 'parameters': PARAMS,
                                               'job': {'nodeCount': 1, **TOOLKIT}})
    definition = load_sweep_file(path, cluster_id='c', seed=seed, recorded_seed=recorded_seed)
    assert definition.seed_origin == origin
    assert bool(calls) == asked
    if origin == 'drawn':
        assert isinstance(definition.sampling['seed'], int) and 0 <= definition.sampling['seed'] < 2 ** 31
    else:
        assert definition.sampling['seed'] == expected


@pytest.mark.parametrize('content, words', [
    (b'parameters: []\n\xff\xfe\n', 'expected a sweep file in UTF-8'),
    (b'{"parameters": [,]}', 'expected valid JSON (Expecting value: line 1 column 17 (char 16))'),
])
def test_a_file_that_is_not_utf8_or_not_json_is_refused_naming_it(tmp_path, content, words):
    path = tmp_path / ('sweep.yaml' if b'\xff' in content else 'sweep.json')
    path.write_bytes(content)
    error = load_error(str(path))
    assert (error.source, error.path) == (str(path), None)
    assert error.message.startswith(words)


def test_hyperband_refuses_a_resource_named_as_a_parameter_or_missing_from_the_job(tmp_path):
    hyperband = {'type': 'hyperband', 'resource': 'LR', 'minResource': 1, 'maxResource': 9, 'seed': 1}
    job = {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'x {{LR}} {{D}}'}}
    path = write_json(tmp_path, 'sweep.json', {'sampling': hyperband, 'parameters': PARAMS, 'job': job,
                                               'objective': {'metric': 'acc', 'goal': 'max', 'step': 'epoch'}})
    error = load_error(path, adaptive=True)
    assert (error.source, error.path) == (path, 'sampling.resource')
    assert error.message == ('expected a name that is not a parameter: the controller sets the resource LR of each '
                             'job itself')
    path = write_json(tmp_path, 'sweep.json', {'sampling': dict(hyperband, resource='EPOCHS'), 'parameters': PARAMS,
                                               'job': job,
                                               'objective': {'metric': 'acc', 'goal': 'max', 'step': 'epoch'}})
    error = load_error(path, adaptive=True)
    assert (error.source, error.path) == (path, 'sampling.resource')
    assert error.message == ("expected a {{EPOCHS}} placeholder in the job for the resource EPOCHS: the controller "
                             "fills it with each job's resource (epochs, say)")


@pytest.mark.parametrize('prefix, sample_note', [('logs', False), ('{{LR}}/logs', True)])
def test_a_refused_path_prefix_names_its_file_and_field_in_each_form_of_job(tmp_path, prefix, sample_note):
    outputs = [{'id': 'OUT', 'pathPrefix': '$AZ_BATCHAI_JOB_TEMP'}, {'id': 'M', 'pathPrefix': prefix}]
    for field, where in (('outputDirectories', 'outputDirectories[1].pathPrefix'),
                         ('stdOutErrPathPrefix', 'stdOutErrPathPrefix')):
        properties = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP', **TOOLKIT}
        properties[field] = outputs if field == 'outputDirectories' else prefix
        for path, source, path_prefix in job_forms(tmp_path, properties):
            error = load_error(path)
            assert (error.source, error.path) == (str(tmp_path / source), path_prefix + where)
            assert str(error).startswith('{}: {}: expected'.format(tmp_path / source, path_prefix + where))
            assert error.message.endswith("(with the placeholders of '{{LR}}/logs' replaced by sample values)") \
                == sample_note


@pytest.mark.parametrize('field', ['storageAccountKey', 'connectionString', 'sasToken'])
def test_a_credential_anywhere_in_the_file_is_refused_at_its_place(tmp_path, field):
    help_text = ('storage credentials never go in the sweep file: set AZURE_STORAGE_KEY, '
                 'AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_SAS_TOKEN in the environment instead')
    shares = [{'azureFileUrl': 'https://a.file.core.windows.net/s', 'relativeMountPath': 'a'},
              {'azureFileUrl': 'https://a.file.core.windows.net/s', 'relativeMountPath': 'b',
               'credentials': {field: 'secret'}}]
    for document, where in (
            ({'parameters': PARAMS, 'job': {'nodeCount': 1, 'mountVolumes': {'azureFileShares': shares}, **TOOLKIT}},
             'job.mountVolumes.azureFileShares[1].credentials.' + field),
            ({'parameters': [PARAMS[0], dict(PARAMS[1], **{field: 'secret'})], 'job': {'nodeCount': 1, **TOOLKIT}},
             'parameters[1].' + field)):
        path = write_json(tmp_path, 'sweep.json', document)
        error = load_error(path)
        assert (error.source, error.path) == (path, where)
        assert error.message == 'expected no {}: {}'.format(field, help_text)
        assert 'secret' not in str(error)


def test_sampling_is_resolved_with_its_defaults_and_the_command_lines_overrides(tmp_path):
    job = {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'x {{LR}} {{D}} {{EPOCHS}}'}}
    objective = {'metric': 'acc', 'goal': 'max', 'step': 'epoch'}
    hyperband = {'type': 'hyperband', 'resource': 'EPOCHS', 'minResource': 1, 'maxResource': 9, 'seed': 1}
    definition = load_sweep_file(write_json(tmp_path, 'h.json', {
        'sampling': hyperband, 'parameters': PARAMS, 'job': job, 'objective': objective}), cluster_id='c',
        adaptive=True)
    # eta defaults to 3: rungs at 1, 3 and 9 epochs
    assert {key: definition.sampling[key] for key in ('type', 'count', 'seed', 'resource', 'minResource',
                                                      'maxResource', 'eta')} == dict(hyperband, count=None, eta=3)
    assert definition.resource_spec.name == 'EPOCHS' and definition.resource_spec.values() == [1, 3, 9]
    definition = load_sweep_file(write_json(tmp_path, 'h2.json', {
        'sampling': dict(hyperband, eta=2, maxResource=4), 'parameters': PARAMS, 'job': job, 'objective': objective}),
        cluster_id='c', adaptive=True)
    assert definition.sampling['eta'] == 2 and definition.resource_spec.values() == [1, 2, 4]
    assert load_sweep_file(write_json(tmp_path, 'g.json', {'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT}}),
                           cluster_id='c').resource_spec is None

    random_file = write_json(tmp_path, 'r.json', {'sampling': {'type': 'random', 'count': 2, 'seed': 4},
                                                  'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT}})
    assert load_sweep_file(random_file, cluster_id='c').sampling == {'type': 'random', 'count': 2, 'seed': 4}
    assert load_sweep_file(random_file, cluster_id='c', count=1, seed=0).sampling == {
        'type': 'random', 'count': 1, 'seed': 0}
    grid_file = write_json(tmp_path, 'g.json', {'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT}})
    assert load_sweep_file(grid_file, cluster_id='c', sampling='random', count=2, seed=3).sampling == {
        'type': 'random', 'count': 2, 'seed': 3}
    error = load_error(grid_file, count=2)
    assert (error.source, error.path) == (grid_file, 'sampling.type')
    assert error.message == 'expected random sampling for a count of jobs (this sweep samples a grid)'
    error = load_error(grid_file, sampling='random')
    assert (error.source, error.path) == (grid_file, 'sampling.count')
    assert error.message == ('expected the number of jobs of a random search (or a count on the command line)')


@pytest.mark.parametrize('parameter', [
    {'name': 'LR', 'type': 'numeric', 'dataType': 'REAL', 'start': 0.1, 'end': 0.9, 'scale': 'RANDOM_UNIFORM',
     'numValues': 3},
    {'name': 'LR', 'type': 'numeric', 'dataType': 'REAL', 'start': 0.1, 'end': 0.9, 'scale': 'LINEAR',
     'numValues': 9}])
def test_a_schema_error_on_a_sample_value_reads_the_same_each_time_the_file_is_loaded(tmp_path, parameter):
    # The message names the sample value checked: the same file must give the same message (a fixed draw).
    path = write_json(tmp_path, 'sweep.json', {'parameters': [parameter], 'job': {
        'nodeCount': '{{LR}}', 'customToolkitSettings': {'commandLine': 'x'}}})
    messages = {load_error(path, seed=1).message for _ in range(4)}
    assert len(messages) == 1
    assert messages.pop().startswith('expected an integer, got the number 0.')


@pytest.mark.parametrize('method, root', [('CLUSTER', '$AZ_BATCHAI_MOUNT_ROOT'), ('JOB', '$AZ_BATCHAI_JOB_MOUNT_ROOT')])
def test_a_file_parameters_sample_is_a_path_under_its_mount_without_listing_storage(method, root):
    # The template is checked with this value in the file parameter's placeholders (a path prefix under the mount
    # root passes, as the real files will): no storage is listed to make it.
    from azext_batchai_sweep.core.spec.params import FileParamSpec
    from azext_batchai_sweep.core.spec.sweepfile import _sample
    spec = FileParamSpec(parameterName='F', storageAccountName='acct', storageType='FILE', mountMethod=method,
                         mountPath='data', fileshare='share')
    assert _sample(spec) == root + '/data/sample'


@pytest.mark.parametrize('sampling, refused', [({'type': 'random', 'count': 2, 'seed': 3}, True),
                                               ({'type': 'random', 'count': 2}, True),
                                               ({'type': 'grid'}, False)])
def test_a_job_setting_the_sweeps_seed_variable_is_refused_when_loaded_if_the_sweep_draws(tmp_path, sampling,
                                                                                          refused):
    # It was refused only when the jobs were made, at `properties.environmentVariables` (not where it was written).
    properties = {'nodeCount': 1, 'environmentVariables': [{'name': 'BATCHAI_SWEEP_SEED', 'value': '1'}], **TOOLKIT}
    for path, source, prefix in job_forms(tmp_path, properties):
        document = json.loads(open(path, encoding='utf-8').read())
        document['sampling'] = sampling
        write_json(tmp_path, path.rpartition('/')[2], document)
        if refused:
            error = load_error(path)
            assert (error.source, error.path) == (str(tmp_path / source), prefix + 'environmentVariables')
            assert error.message.startswith('environment variable BATCHAI_SWEEP_SEED is set by the sweep')
        else:  # a grid drawing nothing gives its jobs no seed: the variable is the template's own
            jobs = list(load_sweep_file(path, cluster_id='c').jobs(sweep_name='sw'))
            assert [environment(job)['BATCHAI_SWEEP_SEED'] for job in jobs] == ['1'] * 2


def test_mounts_load_without_credentials_and_a_share_without_an_account_is_refused_at_it(tmp_path):
    # Credentials come from the environment at submit time: a mount without them is checked as if it had them.
    blob = {'accountName': 'acct', 'containerName': 'c', 'relativeMountPath': 'blob'}
    share = {'azureFileUrl': 'https://acct.file.core.windows.net/s', 'relativeMountPath': 'afs'}
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': {
        'nodeCount': 1, 'mountVolumes': {'azureBlobFileSystems': [blob], 'azureFileShares': [share]}, **TOOLKIT}})
    template = load_sweep_file(path, cluster_id='c').template
    assert template['mountVolumes']['azureBlobFileSystems'] == [blob]
    assert 'credentials' not in template['mountVolumes']['azureFileShares'][0]
    # a URL that names no account: nothing read from it, the schema's `accountName` required
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': {
        'nodeCount': 1, 'mountVolumes': {'azureFileShares': [dict(share, azureFileUrl='https://example.com/s')]},
        **TOOLKIT}})
    error = load_error(path)
    assert (error.source, error.path) == (path, 'job.mountVolumes.azureFileShares[0].accountName')


@pytest.mark.parametrize('kind', ['azureFileShares', 'azureBlobFileSystems'])
def test_a_mount_that_is_no_mapping_gets_the_schemas_error_not_a_traceback(tmp_path, kind):
    # It was an AttributeError (the mounts' credentials set on a string).
    blob = {'accountName': 'acct', 'containerName': 'c', 'relativeMountPath': 'blob'}
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': {
        'nodeCount': 1, 'mountVolumes': {kind: [blob, 'blob'] if kind == 'azureBlobFileSystems' else ['afs']},
        **TOOLKIT}})
    error = load_error(path)
    assert (error.source, error.path) == (path, 'job.mountVolumes.{}[{}]'.format(
        kind, 1 if kind == 'azureBlobFileSystems' else 0))


def test_a_literal_secret_is_refused_at_its_place_in_each_form_of_job(tmp_path):
    properties = {'nodeCount': 1, 'secrets': [{'name': 'A', 'value': '$env:A'}, {'name': 'T', 'value': 'hunter2'}],
                  **TOOLKIT}
    for path, source, prefix in job_forms(tmp_path, properties):
        error = load_error(path)
        assert (error.source, error.path) == (str(tmp_path / source), prefix + 'secrets[1].value')
        assert error.message == ('expected a reference like "$env:NAME" to an environment variable holding the '
                                 'secret, resolved at submit time: a secret value never goes in a template or a plan')
        assert 'hunter2' not in str(error)


def test_the_storage_account_error_says_how_to_give_it_in_each_form_of_job(tmp_path, monkeypatch):
    monkeypatch.delenv('AZURE_BATCHAI_STORAGE_ACCOUNT', raising=False)
    properties = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/<AZURE_BATCHAI_STORAGE_ACCOUNT>',
                  **TOOLKIT}
    for path, source, prefix in job_forms(tmp_path, properties):
        error = load_error(path)
        assert (error.source, error.path) == (str(tmp_path / source), prefix + 'stdOutErrPathPrefix')
        assert error.message == ('expected a storage account name for <AZURE_BATCHAI_STORAGE_ACCOUNT>: give it on the '
                                 'command line (--storage-account-name) or in the AZURE_BATCHAI_STORAGE_ACCOUNT '
                                 'environment variable')


def test_a_template_on_the_command_line_that_cannot_be_read_is_named_as_the_job_template(tmp_path):
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT}})
    missing = str(tmp_path / 'nowhere.json')
    error = load_error(path, template_path=missing)
    assert (error.source, error.path) == (missing, None)
    assert error.message.startswith('expected a readable job template (')
    (tmp_path / 'big.json').write_bytes(b'{' + b' ' * (8 << 20) + b'}')
    error = load_error(path, template_path=str(tmp_path / 'big.json'))
    assert 'job template' in error.message and 'sweep file' not in error.message


def test_drawn_seeds_span_the_31_bit_range(tmp_path):
    path = write_json(tmp_path, 'sweep.json', {'sampling': {'type': 'random', 'count': 2}, 'parameters': PARAMS,
                                               'job': {'nodeCount': 1, **TOOLKIT}})
    seeds = [load_sweep_file(path, cluster_id='c').sampling['seed'] for _ in range(24)]
    assert all(isinstance(seed, int) and 0 <= seed < 2 ** 31 for seed in seeds)
    # 24 draws from 2**31 values: all distinct and one above 2**24, but for a chance below one in a million
    assert len(set(seeds)) == 24 and max(seeds) >= 2 ** 24


def test_file_storage_is_asked_for_file_parameters_only_with_each_as_written(tmp_path):
    asked = []

    def file_storage(entry):
        asked.append(entry)
        raise SpecError('listed no storage')  # stops the load: the listing itself is not this test's
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT}})
    assert load_sweep_file(path, cluster_id='c', file_storage=file_storage).parameters and asked == []
    entry = {'name': 'F', 'type': 'file', 'storageAccountName': 'acct', 'storageType': 'FILE', 'fileshare': 's',
             'mountPath': 'data'}
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS + [entry], 'job': {'nodeCount': 1, **TOOLKIT}})
    with pytest.raises(SpecError, match='listed no storage'):
        load_sweep_file(path, cluster_id='c', file_storage=file_storage)
    assert asked == [entry]


def test_each_random_uniform_parameter_draws_its_own_stream_from_the_sweeps_seed(tmp_path):
    from azext_batchai_sweep.core.spec.params import NumParamSpec
    numeric = {'type': 'numeric', 'dataType': 'REAL', 'start': 0, 'end': 1, 'numValues': 4, 'scale': 'RANDOM_UNIFORM'}
    path = write_json(tmp_path, 'sweep.json', {'parameters': [dict(numeric, name='A'), dict(numeric, name='B')],
                                               'job': {'nodeCount': 1, 'customToolkitSettings': {
                                                   'commandLine': 'x {{A}} {{B}}'}}})
    definition = load_sweep_file(path, cluster_id='c', seed=7)
    a, b = (spec.values() for spec in definition.parameters)
    assert a != b
    for name, values in (('A', a), ('B', b)):
        assert values == NumParamSpec(parameterName=name, start=0, end=1, dataType='REAL', scale='RANDOM_UNIFORM',
                                      numValues=4, seed='7/' + name).values()


@pytest.mark.parametrize('count', [2, 3])
def test_every_schema_issue_is_listed_after_the_first_with_its_file_and_field(tmp_path, count):
    parameters = [{'name': 'LR', 'type': 'numeric', 'dataType': 'REAL', 'start': 'x', 'end': 1, 'numValues': 2,
                   'scale': 'LOG'}]
    document = {'sampling': {'type': 'random', 'count': 0}, 'parameters': parameters, 'job': 3}
    if count == 2:
        del document['job']  # the schema does not require it (its own check does, after)
    path = write_json(tmp_path, 'sweep.json', document)
    error = load_error(path)
    lines = error.message.split('\n')
    assert error.path == 'parameters[0].start' and lines[0] == "expected a number, got the string 'x'"
    assert lines[1:] == ['  {}: sampling.count: expected a number at least 1, got the number 0'.format(path)] + (
        ['  {}: job: expected a string or a mapping, got the number 3'.format(path)] if count == 3 else [])


def test_a_load_is_for_create_and_submit_unless_told_it_is_for_run(tmp_path):
    # The default is the stricter: an earlyTermination section is `sweep run`'s only.
    path = write_json(tmp_path, 'sweep.json', {
        'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT},
        'objective': {'metric': 'acc', 'goal': 'max', 'step': 'epoch'}, 'earlyTermination': {'policy': 'median'}})
    error = load_error(path)
    assert error.path == 'earlyTermination' and 'az batchai sweep run' in error.message
    assert load_sweep_file(path, cluster_id='c', adaptive=True).early_termination['policy'] == 'median'


@pytest.mark.parametrize('names, index', [(['A', 'A'], 1), (['A', 'B', 'A'], 2), (['A', 'B', 'B'], 2)])
def test_a_parameter_name_used_twice_is_refused_at_its_second_use_in_these_words(tmp_path, names, index):
    parameters = [dict(PARAMS[0], name=name) for name in names]
    path = write_json(tmp_path, 'sweep.json', {'parameters': parameters, 'job': {'nodeCount': 1, **TOOLKIT}})
    error = load_error(path)
    assert (error.source, error.path, error.message) == (
        path, 'parameters[{}].name'.format(index), 'expected a name not used by another parameter')


def test_runs_max_total_jobs_bounds_a_bayesian_search_that_has_no_count_nor_limit(tmp_path):
    # `sweep run --max-total-jobs N` stands for limits.maxTotalJobs: without either, the search has no end
    path = write_json(tmp_path, 'sweep.json', {
        'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT}, 'sampling': {'type': 'bayesian'},
        'objective': {'metric': 'acc', 'goal': 'max'}})
    error = load_error(path, adaptive=True)
    assert error.path == 'sampling.count' and 'limits.maxTotalJobs' in error.message
    definition = load_sweep_file(path, cluster_id='c', adaptive=True, max_total_jobs=12)
    assert definition.sampling['type'] == 'bayesian' and definition.sampling['count'] is None


@pytest.mark.parametrize('job_cluster, cluster_id, warned', [(None, None, True), ({'id': 'in-file'}, None, False),
                                                              (None, 'given', False), ({'id': 'in-file'}, 'given', False)])
def test_a_job_without_a_cluster_loads_with_a_warning_and_a_given_cluster_replaces_the_files(tmp_path, caplog,
                                                                                            job_cluster, cluster_id,
                                                                                            warned):
    job = dict({'nodeCount': 1, **TOOLKIT}, **({'cluster': job_cluster} if job_cluster else {}))
    path = write_json(tmp_path, 'sweep.json', {'parameters': PARAMS, 'job': job})
    with caplog.at_level(logging.WARNING, logger='azext_batchai_sweep.core.spec.sweepfile'):
        definition = load_sweep_file(path, cluster_id=cluster_id)
    assert definition.template.get('cluster') == ({'id': cluster_id} if cluster_id else job_cluster)
    assert [r.getMessage() for r in caplog.records if 'cluster' in r.getMessage()] == (
        ['The job template has no cluster: give one (--cluster) before submitting the sweep.'] if warned else [])


def _decode_error(content):
    try:
        content.decode('utf-8')
    except UnicodeDecodeError as exc:
        return str(exc)
    raise AssertionError(content)


@pytest.mark.parametrize('as_template', [False, True], ids=['sweep-file', 'template'])
def test_a_file_that_cannot_be_read_is_refused_naming_it_and_why(tmp_path, as_template):
    from azext_batchai_sweep.core.spec.document_limits import MAX_DOCUMENT_BYTES, too_large
    what = 'job template' if as_template else 'sweep file'
    good = write_json(tmp_path, 'good.json', {'parameters': PARAMS, 'job': {'nodeCount': 1, **TOOLKIT}})
    (tmp_path / 'folder.json').mkdir()
    (tmp_path / 'latin.json').write_bytes(b'{"parameters": "caf\xe9"}')
    (tmp_path / 'big.json').write_bytes(b'{' + b' ' * MAX_DOCUMENT_BYTES + b'}')  # one byte over
    cases = [('missing.json', 'expected a readable {} (No such file or directory)'.format(what)),
             ('folder.json', 'expected a readable {} (not a regular file: a folder)'.format(what)),
             ('latin.json', 'expected a {} in UTF-8 ({})'.format(what, _decode_error(b'{"parameters": "caf\xe9"}'))),
             ('big.json', too_large(what, 'the file is larger'))]
    for name, words in cases:
        path = str(tmp_path / name)
        error = load_error(good, template_path=path) if as_template else load_error(path)
        assert (error.source, error.path, error.message) == (path, None, words)


def test_a_parser_that_runs_out_of_stack_is_the_size_error_naming_the_file(tmp_path, monkeypatch):
    # The depth check on the text (document_limits.check_text_depth) is met before any parser; should a parser
    # release ever recurse deeper than it allows (json does: libyaml has a limit of its own), its RecursionError is
    # still the size error, not a traceback.
    from azext_batchai_sweep.core.spec import sweepfile
    from azext_batchai_sweep.core.spec.document_limits import too_large
    monkeypatch.setattr(sweepfile, 'check_text_depth', lambda *args: None)
    path = tmp_path / 'deep.json'
    path.write_text('[' * 100000 + ']' * 100000, encoding='utf-8')
    error = load_error(str(path))
    assert (error.source, error.path, error.message) == (
        str(path), None, too_large('sweep file', 'it nests too deep to read'))


@pytest.mark.parametrize('text, where', [('parameters: [{name: LR\n', 'line 2, column 1'),
                                         ('parameters: []\n---\njob: x\n', 'line 2, column 1'),
                                         ('parameters: \x07\n', None)], ids=['parser', 'composer', 'reader'])
def test_a_file_that_is_not_yaml_is_refused_with_the_parsers_problem_and_where_it_is(tmp_path, text, where):
    # The parser's own words (its release's): the problem alone, with its line and column where it has a mark (a
    # reader's error has none), never a traceback.
    import yaml
    from azext_batchai_sweep.core.spec.sweepfile import _Loader
    with pytest.raises(yaml.YAMLError) as parsed:
        _Loader(text).get_single_node()
    problem = getattr(parsed.value, 'problem', None) or str(parsed.value)
    path = tmp_path / 'sweep.yaml'
    path.write_text(text, encoding='utf-8')
    error = load_error(str(path))
    assert (error.source, error.path, error.message) == (str(path), where, 'expected valid YAML ({})'.format(problem))
    assert (where is None) == (getattr(parsed.value, 'problem_mark', None) is None)


@pytest.mark.parametrize('as_template', [False, True], ids=['sweep-file', 'template'])
@pytest.mark.parametrize('number', ['1' * 101, '0.' + '5' * 99, '1e' + '0' * 99])
def test_a_json_number_too_long_is_refused_in_the_file_that_holds_it(tmp_path, as_template, number):
    job = '{"nodeCount": %s, "customToolkitSettings": {"commandLine": "x {{LR}} {{D}}"}}' % number
    document = '{"parameters": %s, "job": %s}' % (json.dumps(PARAMS), '"job.json"' if as_template else job)
    (tmp_path / 'job.json').write_text(job, encoding='utf-8')
    path = tmp_path / 'sweep.json'
    path.write_text(document, encoding='utf-8')
    error = load_error(str(path))
    assert (error.source, error.path) == (str(tmp_path / ('job.json' if as_template else 'sweep.json')), None)
    assert error.message == 'expected numbers of at most 100 characters in a {}, found one of {}'.format(
        'job template' if as_template else 'sweep file', len(number))
