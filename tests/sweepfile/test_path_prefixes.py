"""stdOutErrPathPrefix and outputDirectories[].pathPrefix as Batch AI documents them (core/spec/job_paths.py): an
absolute path on the node, or one under $AZ_BATCHAI_MOUNT_ROOT, $AZ_BATCHAI_JOB_MOUNT_ROOT, $AZ_BATCHAI_JOB_TEMP.
A sweep file with any other value is refused when it is loaded (before the first request), naming the field."""
import json

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file

ACCEPTED = ['$AZ_BATCHAI_JOB_TEMP', '$AZ_BATCHAI_JOB_TEMP/', '$AZ_BATCHAI_JOB_TEMP/logs', '${AZ_BATCHAI_JOB_TEMP}/logs',
            '$AZ_BATCHAI_JOB_TEMP//logs/', '$AZ_BATCHAI_MOUNT_ROOT/afs', '$AZ_BATCHAI_MOUNT_ROOT/afs/sub/',
            '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs', '$AZ_BATCHAI_MOUNT_ROOT/afs/../afs2', '/mnt/logs', '/tmp/{{LR}}']
REFUSED = ['logs', './logs', '$HOME/logs', '$AZ_BATCHAI_JOB_TEMP_DIR/logs', '$AZ_BATCHAI_JOB_TEMPS',
           '{{LR}}/logs', '$AZ_BATCHAI_JOB_TEMP/..', '$AZ_BATCHAI_MOUNT_ROOT/afs/../../x']


def _sweep(tmp_path, prefix, field='stdOutErrPathPrefix'):
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP',
           'customToolkitSettings': {'commandLine': 'echo {{LR}}'}}
    if field == 'stdOutErrPathPrefix':
        job['stdOutErrPathPrefix'] = prefix
    else:
        job['outputDirectories'] = [{'id': 'OUT', 'pathPrefix': '$AZ_BATCHAI_JOB_TEMP'},
                                    {'id': 'M', 'pathPrefix': prefix}]
    path = tmp_path / 'sweep.yaml'
    path.write_text('parameters: [{name: LR, type: discrete, values: [1, 2]}]\njob: ' + json.dumps(job) + '\n')
    return str(path)


@pytest.mark.parametrize('prefix', ACCEPTED)
@pytest.mark.parametrize('field', ['stdOutErrPathPrefix', 'pathPrefix'])
def test_a_prefix_batch_ai_accepted_loads(tmp_path, prefix, field):
    assert load_sweep_file(_sweep(tmp_path, prefix, field)).jobs()


@pytest.mark.parametrize('prefix', REFUSED)
def test_another_stdouterr_prefix_is_refused_naming_the_field_and_what_is_allowed(tmp_path, prefix):
    with pytest.raises(SpecError) as caught:
        load_sweep_file(_sweep(tmp_path, prefix))
    message = str(caught.value)
    assert 'job.stdOutErrPathPrefix: expected' in message, message
    assert '{!r}'.format(prefix) in message, message
    allowed = ('an absolute path, or one starting with $AZ_BATCHAI_MOUNT_ROOT, $AZ_BATCHAI_JOB_MOUNT_ROOT, '
               '$AZ_BATCHAI_JOB_TEMP')
    assert (allowed if '..' not in prefix else 'no ".." above it') in message, message


@pytest.mark.parametrize('prefix', REFUSED[:4])
def test_another_output_prefix_is_refused_naming_the_output(tmp_path, prefix):
    with pytest.raises(SpecError) as caught:
        load_sweep_file(_sweep(tmp_path, prefix, field='pathPrefix'))
    assert 'job.outputDirectories[1].pathPrefix: expected' in str(caught.value), str(caught.value)
