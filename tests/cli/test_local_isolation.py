"""Pipelines that share an az config dir do not steer each other's local service (issue 32): a second `local start`
never silently retargets the users of a service that still runs, `local stop` clears a target only once no service
runs for it, and `local start -h` says how a pipeline isolates itself. Through the real az executable."""
import pytest

from azext_batchai_sweep.localservice import control
from tests.cli.test_local_and_help import configured

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_a_second_start_does_not_retarget_a_running_services_users(az, az_config_dir, tmp_path):
    first, second = str(tmp_path / 'first'), str(tmp_path / 'second')
    try:
        started = az('batchai', 'sweep', 'local', 'start', '--data-dir', first, '--slots', '1', '-o', 'json')
        assert started.exit_code == 0, started.stderr
        target = configured(az_config_dir)
        # Another pipeline's start in the same config dir: refused, nothing started, the target unchanged.
        refused = az('batchai', 'sweep', 'local', 'start', '--data-dir', second, '--slots', '1', '-o', 'json')
        assert refused.exit_code == 6 and refused.stdout == '', refused.stderr
        assert 'already targets the local service at {}'.format(started.json()['endpoint']) in refused.stderr
        assert 'AZURE_CONFIG_DIR' in refused.stderr and '--retarget' in refused.stderr
        assert configured(az_config_dir) == target and not control.status(second)['running']
        # The same start again (a retried step) shares the running service: no refusal, same target.
        again = az('batchai', 'sweep', 'local', 'start', '--data-dir', first, '-o', 'json')
        assert again.exit_code == 0 and again.json()['endpoint'] == started.json()['endpoint'], again.stderr
        assert 'already runs on' in again.stderr and configured(az_config_dir) == target
        # Asked for explicitly: the config points at the new service.
        moved = az('batchai', 'sweep', 'local', 'start', '--data-dir', second, '--slots', '1', '--retarget',
                   '-o', 'json')
        assert moved.exit_code == 0, moved.stderr
        assert configured(az_config_dir)['endpoint'] == moved.json()['endpoint'] != target['endpoint']
    finally:
        control.stop(first)
        control.stop(second)


def test_stop_clears_the_target_only_once_no_service_runs_for_it(az, az_config_dir, tmp_path):
    outer = tmp_path / 'sweeps'
    inner = str(outer / 'ci')
    try:
        started = az('batchai', 'sweep', 'local', 'start', '--data-dir', inner, '--slots', '1', '-o', 'json')
        assert started.exit_code == 0, started.stderr
        target = configured(az_config_dir)
        # A stop of another data dir (here the folder holding the targeted one, where nothing runs) keeps the target.
        other = az('batchai', 'sweep', 'local', 'stop', '--data-dir', str(outer), '-o', 'json')
        assert other.exit_code == 0 and other.json()['stopped'] is False, other.stderr
        assert configured(az_config_dir) == target and 'Cleared' not in other.stderr
        status = az('batchai', 'sweep', 'local', 'status', '--query', 'targeted')
        assert status.json() is True
        stopped = az('batchai', 'sweep', 'local', 'stop', '-o', 'json')
        assert stopped.exit_code == 0 and stopped.json()['stopped'] is True
        assert configured(az_config_dir) == {} and 'Cleared az config batchai_sweep' in stopped.stderr
    finally:
        control.stop(inner)


def test_local_start_help_says_how_a_pipeline_isolates_itself(az):
    shown = az('batchai', 'sweep', 'local', 'start', '-h')
    assert shown.exit_code == 0
    text = ' '.join(shown.stdout.split())
    for needed in ('AZURE_CONFIG_DIR', 'AZURE_BATCHAI_SWEEP_ENDPOINT', 'AZURE_BATCHAI_SWEEP_TOKEN_FILE', '--retarget',
                   'export AZURE_CONFIG_DIR="$(mktemp -d)"', 'pipelines.md#exit-codes'):
        assert needed in text, needed
