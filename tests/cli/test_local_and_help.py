"""`az batchai sweep local start|status|stop` and the help of every command, through the real az executable."""
import configparser
import os

import pytest

from azext_batchai_sweep._exit_codes import BAD_INPUT
from azext_batchai_sweep.localservice import control
from tests.cli.test_sweep_errors_and_tables import fits

pytestmark = pytest.mark.az

COMMANDS = ['create', 'submit', 'status', 'resubmit', 'metrics', 'delete', 'download', 'local start', 'local status',
            'local stop', 'local show-connection-string']


def shown_path(cell, path):
    """A table's path cell shows the path, whole or cut at its start ('...' and its end)."""
    return cell == path or (cell.startswith('...') and len(cell) > 20 and path.endswith(cell[3:]))


def configured(config_dir):
    parser = configparser.ConfigParser()
    parser.read(os.path.join(config_dir, 'config'))
    return dict(parser['batchai_sweep']) if parser.has_section('batchai_sweep') else {}


@pytest.mark.service
def test_local_start_points_the_commands_at_the_service_and_stop_clears_it(az, az_config_dir, tmp_path):
    data_dir = str(tmp_path / 'local')
    try:
        started = az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--slots', '1', '-o', 'json')
        assert started.exit_code == 0, started.stderr
        info = started.json()
        again = az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--slots', '1', '-o', 'table')
        row = fits(again.stdout)[2]  # the same service; a data dir too long for 100 columns keeps its end
        assert row[:2] == [info['endpoint'], 'processes'] and shown_path(row[2], data_dir), again.stdout
        assert info['dataDir'] == data_dir and info['endpoint'].startswith('http://127.0.0.1:')
        assert (info['workspace'], info['cluster'], info['resourceGroup']) == ('local', 'local', 'batchai-local')
        assert os.path.isfile(info['tokenFile']) and info['filesEndpoint'] and info['pid'] > 0
        assert configured(az_config_dir) == {'endpoint': info['endpoint'], 'token_file': info['tokenFile']}

        status = az('batchai', 'sweep', 'local', 'status', '--data-dir', data_dir, '--query', '[running, targeted]')
        assert status.json() == [True, True]
        # Any sweep command now says which service it uses; the default workspace is there, no experiment yet.
        listed = az('batchai', 'sweep', 'status', '-g', 'batchai-local', '-w', 'local', '-e', 'none', '-n', 's')
        assert 'Using the Batch AI service at {}'.format(info['endpoint']) in listed.stderr
        assert listed.exit_code == 3 and 'Experiment none does not exist in workspace' in listed.stderr

        table = az('batchai', 'sweep', 'local', 'status', '--data-dir', data_dir, '-o', 'table')
        row = fits(table.stdout)[2]
        assert row[:3] == ['True', 'True', 'processes'] and shown_path(row[3], data_dir), table.stdout
        stopped = az('batchai', 'sweep', 'local', 'stop', '--data-dir', data_dir, '-o', 'table')
        assert stopped.exit_code == 0, stopped.stderr
        assert fits(stopped.stdout)[2] == ['True', data_dir], stopped.stdout  # it fits: whole
        assert configured(az_config_dir) == {}
        after = az('batchai', 'sweep', 'local', 'status', '--data-dir', data_dir, '--query', 'running')
        assert after.json() is False
    finally:
        control.stop(data_dir)


@pytest.mark.service
def test_local_commands_without_data_dir_use_the_targeted_service_even_once_it_stopped(az, az_config_dir, tmp_path):
    # One rule for "the targeted service's data dir" (the folder of its token file), for every local command: a
    # service that died (or was stopped outside az) is still the one status, show-connection-string and stop name.
    data_dir = str(tmp_path / 'targeted')
    try:
        started = az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--slots', '1', '-o', 'json')
        assert started.exit_code == 0, started.stderr
        running = az('batchai', 'sweep', 'local', 'status', '--query', '[dataDir, running]')
        assert running.json() == [data_dir, True]
        shown = az('batchai', 'sweep', 'local', 'show-connection-string', '-n', 'acct', '--query',
                   'connectionString', '-o', 'tsv')
        assert shown.exit_code == 0 and started.json()['filesEndpoint'] in shown.stdout
    finally:
        control.stop(data_dir)  # outside az: the config still targets it
    assert configured(az_config_dir)['token_file'] == os.path.join(data_dir, 'token')
    after = az('batchai', 'sweep', 'local', 'status', '--query', '[dataDir, running]')
    assert after.json() == [data_dir, False]
    refused = az('batchai', 'sweep', 'local', 'show-connection-string', '-n', 'acct')
    assert refused.exit_code != 0 and 'No local Batch AI service runs on {}'.format(data_dir) in refused.stderr
    stopped = az('batchai', 'sweep', 'local', 'stop', '--query', 'dataDir')
    assert stopped.exit_code == 0 and stopped.json() == data_dir
    assert configured(az_config_dir) == {}, 'stopping the targeted data dir clears the target'


def test_local_start_refuses_bad_faults(az, tmp_path):
    result = az('batchai', 'sweep', 'local', 'start', '--data-dir', str(tmp_path / 'x'), '--faults', 'boom=1')
    assert result.exit_code == 6 and 'Invalid --faults' in result.stderr
    assert not (tmp_path / 'x').exists()


def test_every_command_has_help_with_examples(az):
    for command in COMMANDS:
        result = az('batchai', 'sweep', *command.split(), '-h')
        assert result.exit_code == 0, (command, result.stderr)
        assert 'Examples' in result.stdout, command
    group = az('batchai', 'sweep', '-h')
    for command in ('submit', 'status', 'resubmit', 'metrics', 'delete', 'download', 'local'):
        assert command in group.stdout


@pytest.mark.service
def test_local_start_on_a_port_in_use_names_it_and_its_holder_and_leaves_no_data_dir(az, tmp_path):
    option = '--port'
    import socket
    # A port this test process listens on: the message names it and this process (from /proc), and suggests 0.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(('127.0.0.1', 0))
        held.listen(1)
        port = held.getsockname()[1]
        data_dir = tmp_path / 'fresh' / 'data'
        result = az('batchai', 'sweep', 'local', 'start', '--data-dir', str(data_dir), option, port)
    assert result.exit_code == BAD_INPUT, result.stderr  # the user's --port (docs/pipelines.md#exit-codes)
    assert 'port {} ({} {}) is in use by process {} ('.format(port, option, port, os.getpid()) in result.stderr
    assert '--port 0' in result.stderr and 'Traceback' not in result.stderr
    assert not data_dir.exists(), 'a failed first start leaves no half-made data dir'


@pytest.mark.service
def test_a_service_that_exits_at_start_removes_the_data_dir_made_for_it_and_quotes_its_log(tmp_path):
    # The service process itself refuses (GPUs it cannot parse; az's validator would refuse them earlier, so the
    # control module is called directly): its last log line is in the error, and the data dir this start made is gone.
    data_dir = tmp_path / 'made'
    with pytest.raises(RuntimeError, match=r'exited with code 2: error: .*none-such'):
        control.start_background(str(data_dir), scheduler={'gpus': 'none-such'})
    assert not data_dir.exists()
    kept = tmp_path / 'kept'
    kept.mkdir(mode=0o700)
    with pytest.raises(RuntimeError):
        control.start_background(str(kept), scheduler={'gpus': 'none-such'})
    assert kept.is_dir(), 'a data dir that was there before is never removed'
