"""auth.py: az's login as the Batch token credential: refreshed before expiry, invalidated on a 401, and no token
in a message, a repr or a log line. The source is az itself (`az account get-access-token`), stood in for here by
a script printing what az prints (the real az with an offline login is the e2e tests' part)."""
import logging
import os
import stat

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential, LoginError, az_cli_token

SECRET = 'eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.secret-token-value'


def test_token_is_refreshed_before_expiry_and_after_invalidate(caplog):
    now = [1000.0]
    issued = []

    def source():
        issued.append(now[0])
        return SECRET + str(len(issued)), now[0] + 3600
    credential = AzLoginCredential(source=source, refresh_margin=300, clock=lambda: now[0])
    caplog.set_level(logging.DEBUG)
    assert credential.get_token('https://batch.core.windows.net/.default').token == SECRET + '1'
    now[0] += 3600 - 301
    assert credential.get_token().token == SECRET + '1'  # still more than the margin left
    now[0] += 2
    assert credential.get_token().token == SECRET + '2'  # within the margin: asked again
    credential.invalidate()
    assert credential.get_token().token == SECRET + '3'
    assert SECRET not in caplog.text and SECRET not in repr(credential)


def _fake_python(tmp_path, stdout, code=0, stderr=''):
    """An executable that answers `python -m azure.cli account get-access-token ...` with what az would print."""
    import uuid
    name = uuid.uuid4().hex
    (tmp_path / (name + '.out')).write_text(stdout)
    (tmp_path / (name + '.err')).write_text(stderr)
    script = tmp_path / name
    script.write_text('#!/bin/sh\ncat "{0}.out"\ncat "{0}.err" >&2\nexit {1}\n'.format(script, code))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_az_cli_token_reads_az_and_never_quotes_its_stdout(tmp_path):
    good = _fake_python(tmp_path, '{"accessToken": "%s", "expires_on": 1795716621, "tokenType": "Bearer"}' % SECRET)
    assert az_cli_token(python=good) == (SECRET, 1795716621)
    for stdout, code, stderr, words in [
            ('{"accessToken": "%s"}' % SECRET, 0, '', 'not a token'),
            (SECRET, 0, '', 'not a token'),
            ('', 1, "ERROR: Please run 'az login' to setup account.", "Please run 'az login'")]:
        with pytest.raises(LoginError) as raised:
            az_cli_token(python=_fake_python(tmp_path, stdout, code, stderr))
        assert words in str(raised.value) and SECRET not in str(raised.value)
    assert os.path.exists(good)
