"""Names are exact: ARM names with a trailing newline or a character Batch AI refuses are refused whole
(fullmatch), the subscription segment is validated like the others, and nothing unchecked reaches a path."""
import os
import urllib.parse

import pytest

from tests.localservice.conftest import raw

pytestmark = pytest.mark.service

ARM = '/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}'
BAD_NAMES = ['job\n', 'job\r', 'job\n\n', '\njob', 'a b', 'a.b', 'a/b', 'a\\b', 'é', 'ｊｏｂ', 'x' * 65, '..', '.',
             'a\x00b', 'a\tb', 'a;b', "a'b", 'a$b']


def _quoted(path):
    return urllib.parse.quote(path, safe='/')


@pytest.mark.parametrize('name', BAD_NAMES)
def test_bad_experiment_and_job_names_are_refused(local_service, name):
    base = ARM.format(local_service.subscription, local_service.resource_group, local_service.workspace)
    status, _, body = raw(local_service, 'PUT', _quoted(base + '/experiments/' + name))
    assert (status, body['error']['code']) in ((400, 'InvalidResourceName'), (404, 'InvalidResourceType')), name
    raw(local_service, 'PUT', base + '/experiments/names')
    job = {'properties': {'cluster': {'id': local_service.cluster_id}, 'nodeCount': 1,
                          'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP', 'customToolkitSettings': {}}}
    status, _, body = raw(local_service, 'PUT', _quoted(base + '/experiments/names/jobs/' + name), job)
    assert (status, body['error']['code']) in ((400, 'InvalidResourceName'), (404, 'InvalidResourceType')), name
    status, _, body = raw(local_service, 'GET', base + '/experiments/names/jobs')
    assert all(job['name'] != name for job in body['value'])


@pytest.mark.parametrize('name', ['rg\n', 'a/b', '..', '.', 'r g', 'x' * 91])
def test_bad_resource_group_names_are_refused(local_service, name):
    path = ARM.format(local_service.subscription, name, 'ws')
    status, _, body = raw(local_service, 'PUT', _quoted(path), {'location': 'x'})
    assert status in (400, 404) and body['error']['code'] in ('InvalidResourceName', 'InvalidResourceType')


@pytest.mark.parametrize('sub', ['s', '..', '00000000-0000-0000-0000-000000000000\n', '../../etc',
                                 '00000000-0000-0000-0000-00000000000', '0000000000000000000000000000000000000',
                                 'g0000000-0000-0000-0000-000000000000', '00000000-0000-0000-0000-000000000000x'])
def test_the_subscription_segment_is_validated(local_service, sub):
    for method, tail, body in (('GET', '', None), ('PUT', '', {'location': 'x'}),
                               ('PUT', '/experiments/e', None)):
        path = ARM.format(sub, local_service.resource_group, 'subws') + tail
        status, _, answer = raw(local_service, method, _quoted(path), body)
        assert (status, answer['error']['code']) == (400, 'InvalidSubscriptionId'), (sub, method, tail)
    status, _, answer = raw(local_service, 'GET', _quoted(
        '/subscriptions/{}/providers/Microsoft.BatchAI/workspaces'.format(sub)))
    assert (status, answer['error']['code']) == (400, 'InvalidSubscriptionId')


def test_a_cluster_id_with_an_unchecked_segment_is_refused_before_any_path(local_service):
    base = ARM.format(local_service.subscription, local_service.resource_group, local_service.workspace)
    raw(local_service, 'PUT', base + '/experiments/clusterids')
    good = local_service.cluster_id
    for cluster_id in (good.replace(local_service.subscription, '..'), good + '\n', good.replace('/local', '/..'),
                       good.replace('batchai-local', '..'), good + '/extra'):
        job = {'properties': {'cluster': {'id': cluster_id}, 'nodeCount': 1,
                              'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP', 'customToolkitSettings': {}}}
        status, _, body = raw(local_service, 'PUT', base + '/experiments/clusterids/jobs/j', job)
        assert status == 400 and body['error']['code'] in ('InvalidClusterId', 'InvalidSubscriptionId',
                                                           'InvalidResourceName'), cluster_id
    clusters = os.path.join(local_service.data_dir, 'clusters')
    assert set(os.listdir(clusters) if os.path.isdir(clusters) else []) <= {local_service.subscription}


def test_a_good_name_at_the_limits_is_accepted(local_service):
    base = ARM.format(local_service.subscription, local_service.resource_group, local_service.workspace)
    for name in ('a', 'A-b_c', 'x' * 64, '0'):
        status, _, _ = raw(local_service, 'PUT', base + '/experiments/' + name)
        assert status in (200, 202), name
