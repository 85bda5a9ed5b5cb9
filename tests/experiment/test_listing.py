"""Job listings read from the REST JSON (ListedJob) against the SDK's own models, over real HTTP to the local
service: the same jobs, the same values, the same paging and the same errors."""
import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service import listing
from azext_batchai_sweep.core.service.listing import ListedJob, job_summary, list_jobs, parameters_of, state_of
from azext_batchai_sweep.core.service.resubmit import rebuild_body
from azext_batchai_sweep.core.service.submit import submit_jobs

from .service_helpers import new_experiment, quick_retry, sweep_plan, wait_all

pytestmark = pytest.mark.service


@pytest.fixture(scope='module')
def finished_sweep(batchai_client, local_service):
    """Five finished jobs (one failed) of one sweep."""
    svc = local_service
    experiment = new_experiment(batchai_client, svc)
    plan = sweep_plan(svc, 'listing', 5, 'echo "x=$PARAM_X"; test $PARAM_X -ne 3', {'USER_VAR': 'kept'})
    assert submit_jobs(batchai_client, svc.resource_group, svc.workspace, experiment, plan,
                       retry=quick_retry())['submitted'] == 5
    wait_all(batchai_client, svc, experiment, 'listing')
    return experiment


def test_listed_jobs_say_what_the_sdk_models_say(batchai_client, local_service, finished_sweep):
    svc = local_service
    listed = list(list_jobs(batchai_client, svc.resource_group, svc.workspace, finished_sweep))
    sdk = list(batchai_client.jobs.list_by_experiment(svc.resource_group, svc.workspace, finished_sweep))
    assert [job.name for job in listed] == [job.name for job in sdk] and len(listed) == 5
    assert all(isinstance(job, ListedJob) for job in listed)
    for mine, theirs in zip(listed, sdk):
        assert job_summary(mine) == job_summary(theirs)
        assert state_of(mine) == state_of(theirs)
        assert parameters_of(mine) == parameters_of(theirs)
        assert mine.execution_info.start_time == theirs.execution_info.start_time  # datetimes, not strings
        assert mine.execution_info.start_time.tzinfo is not None
        # Anything else comes from the full model, deserialized once.
        assert mine.cluster.id == theirs.cluster.id and mine.node_count == 1
        assert mine.as_model() is mine.as_model() and mine.as_model().as_dict() == theirs.as_dict()
    failed = [job for job in listed if state_of(job) == 'failed']
    assert [job.name for job in failed] == ['listing-003'] and failed[0].execution_info.exit_code == 1
    for mine, theirs in zip(listed, sdk):  # errors as models (tests/reliability/test_service_crash.py has some)
        assert [e.as_dict() for e in mine.execution_info.errors or []] == [
            e.as_dict() for e in theirs.execution_info.errors or []]


def test_a_rebuilt_body_is_the_same_from_a_listed_job_and_from_the_model(batchai_client, local_service,
                                                                         finished_sweep):
    svc = local_service
    listed = next(iter(list_jobs(batchai_client, svc.resource_group, svc.workspace, finished_sweep)))
    model = batchai_client.jobs.get(svc.resource_group, svc.workspace, finished_sweep, listed.name)
    body = rebuild_body(listed)
    assert isinstance(body, models.JobCreateParameters)
    assert body.as_dict() == rebuild_body(model).as_dict()
    assert {var.name: var.value for var in body.environment_variables}['USER_VAR'] == 'kept'


def test_listing_follows_next_links(batchai_client, local_service, finished_sweep, monkeypatch):
    svc = local_service
    monkeypatch.setattr(listing, 'PAGE_SIZE', 2)
    requests_seen = []
    original = listing.send_json

    def counting(client, method, url):
        requests_seen.append(url)
        return original(client, method, url)
    monkeypatch.setattr(listing, 'send_json', counting)
    names = [job.name for job in list_jobs(batchai_client, svc.resource_group, svc.workspace, finished_sweep)]
    assert sorted(names) == ['listing-{:03d}'.format(i) for i in range(5)]  # each once, across three pages
    assert len(requests_seen) == 3 and 'maxresults=2' in requests_seen[0]


def test_listing_a_missing_experiment_raises_what_the_sdk_raises(batchai_client, local_service):
    svc = local_service
    with pytest.raises(ResourceNotFoundError) as mine:
        list(list_jobs(batchai_client, svc.resource_group, svc.workspace, 'no-such-experiment'))
    with pytest.raises(ResourceNotFoundError) as theirs:
        list(batchai_client.jobs.list_by_experiment(svc.resource_group, svc.workspace, 'no-such-experiment'))
    assert mine.value.error.code == theirs.value.error.code and mine.value.status_code == 404


def test_output_files_say_what_the_sdk_file_models_say_across_pages(batchai_client, local_service):
    from azext_batchai_sweep.core.outputs.download import OutputFile, list_output_files
    svc = local_service
    experiment = new_experiment(batchai_client, svc)
    # 1,005 files and a subdirectory: more than the API's 1,000 per page, so the listing takes a nextLink.
    command = ('mkdir -p $AZ_BATCHAI_OUTPUT_MODEL/sub && cd $AZ_BATCHAI_OUTPUT_MODEL && '
               'for i in $(seq 1 1005); do echo $i > f$i.txt; done && echo deep > sub/d.txt')
    plan = sweep_plan(svc, 'files', 1, command)
    submit_jobs(batchai_client, svc.resource_group, svc.workspace, experiment, plan, retry=quick_retry())
    wait_all(batchai_client, svc, experiment, 'files')
    job = plan[0][0]
    mine = list_output_files(batchai_client, svc.resource_group, svc.workspace, experiment, job, 'MODEL')
    options = models.JobsListOutputFilesOptions(outputdirectoryid='MODEL')
    theirs = [f for f in batchai_client.jobs.list_output_files(svc.resource_group, svc.workspace, experiment, job,
                                                               options) if str(f.file_type) != 'directory'
              and getattr(f.file_type, 'value', f.file_type) != 'directory']
    assert len(mine) == len(theirs) == 1005 and all(isinstance(f, OutputFile) for f in mine)
    assert sorted((f.name, f.content_length, f.file_type) for f in mine) == sorted(
        (f.name, f.content_length, getattr(f.file_type, 'value', f.file_type)) for f in theirs)
    assert all(f.download_url and 'sig=' not in repr(f) for f in mine)
    deep = list_output_files(batchai_client, svc.resource_group, svc.workspace, experiment, job, 'MODEL',
                             recursive=True)
    assert len(deep) == 1006 and 'sub/d.txt' in {f.name for f in deep}


@pytest.mark.parametrize('experiment', ['has space', 'x' * 65, 'a/b'])
def test_a_bad_name_fails_as_it_fails_through_the_sdk(batchai_client, local_service, experiment):
    """The SDK's name patterns are not checked client-side (its serializer's client_side_validation is off), so a
    bad name goes to the service, quoted, and comes back as its 400 in both cases."""
    from azure.core.exceptions import HttpResponseError

    from azext_batchai_sweep.core.outputs.download import list_output_files
    svc = local_service
    with pytest.raises(HttpResponseError) as mine:
        list(list_jobs(batchai_client, svc.resource_group, svc.workspace, experiment))
    with pytest.raises(HttpResponseError) as theirs:
        list(batchai_client.jobs.list_by_experiment(svc.resource_group, svc.workspace, experiment))
    assert type(mine.value) is type(theirs.value) and mine.value.status_code == theirs.value.status_code == 400
    assert mine.value.error.code == theirs.value.error.code == 'InvalidResourceName'
    with pytest.raises(HttpResponseError) as as_job:
        list_output_files(batchai_client, svc.resource_group, svc.workspace, 'ok', experiment)  # as a job name
    assert as_job.value.status_code == 400
