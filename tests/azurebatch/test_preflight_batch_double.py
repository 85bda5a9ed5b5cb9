"""`local start`'s data-plane check against the lifecycle double of the Batch data plane behind Prism (ab-double's
batch_prism: every request and answer validated against tests/specs/batch-2024-02-01.19.0), with az's own Batch
token from the offline login: the account found through the ARM double, its endpoint the Prism relay."""
import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import account as account_mod
from azext_batchai_sweep.localservice.schedulers.azurebatch import preflight
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from tests.azurebatch.login_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import (fixtures)

pytestmark = pytest.mark.az


@pytest.fixture
def linked(batch_login, batch_prism):
    batch_login.double.serve_batch_with(batch_prism)
    batch_login.trust(batch_prism.ca_file)
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    batch_login.double.add_batch_account('acct', resource_group='rg1')
    return batch_login


def test_local_start_checks_pass_on_the_lifecycle_double(linked, arm_target, batch_prism):
    credential = linked.credential()
    found = account_mod.find_account('acct', 'rg1', credential=credential, arm=arm_target)
    assert found['batchEndpoint'] == batch_prism.endpoint
    preflight.check_local_start(found, credential)
    pool_lists = [r for r in batch_prism.requests if r.method == 'GET' and r.path == '/pools']
    assert len(pool_lists) == 1
    assert pool_lists[0].query.get('maxresults') == '1' and pool_lists[0].query.get('$select') == 'id'


def test_an_expired_token_is_refused_by_the_lifecycle_double(linked, arm_target, batch_prism):
    credential = linked.credential()
    found = account_mod.find_account('acct', 'rg1', credential=credential, arm=arm_target)
    preflight.check_data_plane(found, credential)
    batch_prism.expire_tokens()  # the credential keeps its token: Batch answers 401
    with pytest.raises(Refusal) as refused:
        preflight.check_data_plane(found, credential)
    assert refused.value.code == 'BatchLoginRefused'
    assert "Batch account 'acct' did not accept az's token (AuthenticationFailed). Log in again with 'az login'" \
        in refused.value.reason
