"""Secrets never leak: a `secrets` value, storage keys, the bearer token and download-link signatures are absent from
stdout, stderr, `--debug` output, the plan file, error messages and the service's log.

The real az executable, with --debug, over a whole sweep (create, submit, status --wait, status --job --tail,
metrics, and a failing submit whose error message is checked too).
"""
import os
import re
import secrets

import pytest

from tests.fixtures_az import service_env

from .helpers import write_sweep_file

pytestmark = [pytest.mark.service, pytest.mark.az, pytest.mark.slow]

# Download links (job output files, read by metrics and tail) carry `sig=<hex HMAC>`; Azure SAS tokens `sig=<b64>`.
SIGNATURE = re.compile(r'sig=([0-9A-Za-z%+/=]{16,})')


def test_secrets_appear_nowhere(az, service_factory, tmp_path):
    svc = service_factory(name='secretive', slots=2)
    secret = 'S3cr3t-' + secrets.token_hex(12)
    storage_key = secrets.token_urlsafe(48)
    sas = 'sv=2021-06-08&ss=b&srt=co&sp=rl&se=2099-01-01T00:00:00Z&sig=' + secrets.token_urlsafe(24)
    env = dict(service_env(svc), MY_SECRET=secret, AZURE_STORAGE_KEY=storage_key,
               AZURE_BATCHAI_STORAGE_KEY=storage_key, AZURE_STORAGE_SAS_TOKEN=sas)
    write_sweep_file(tmp_path, 3, command='echo "loss=0.$PARAM_X"; test -n "$S" && echo has-secret',
                     cluster_id=svc.cluster_id, extra_job={'secrets': [{'name': 'S', 'value': '$env:MY_SECRET'}]})
    common = ['-g', svc.resource_group, '-w', svc.workspace, '-e', 'secrets', '-n', 'rel', '--debug']
    runs = [
        az('batchai', 'sweep', 'create', *common, '--spec', 'sweep.json', env=env),
        az('batchai', 'sweep', 'submit', *common, '--wait', '--interval', '0.5', env=env),
        az('batchai', 'sweep', 'status', *common, env=env),
        az('batchai', 'sweep', 'metrics', *common, '--metric', 'loss', '--output-directory-id', 'stdouterr',
           '--file', 'stdout.txt', env=env),
    ]
    for result in runs:
        assert result.exit_code == 0, result.stderr[-3000:]
    assert runs[1].json()['submitted'] == 3
    names = [row['name'] for row in runs[2].json()['jobs']]
    tail = az('batchai', 'sweep', 'status', *common, '--job', names[0], '--tail', '5', env=env)
    assert tail.exit_code == 0, tail.stderr[-3000:]
    assert 'has-secret' in tail.stdout  # the job did get its secret
    runs.append(tail)
    # A failure path: the secret's variable unset makes submit refuse; its message must not carry the others.
    failing = az('batchai', 'sweep', 'submit', *common, '-e', 'secrets-2', env={k: v for k, v in env.items() if k != 'MY_SECRET'})
    assert failing.exit_code != 0 and 'MY_SECRET' in failing.stderr, failing.stderr[-2000:]
    runs.append(failing)

    with open(os.path.join(str(tmp_path), 'rel.plan.jsonl'), encoding='utf-8') as f:
        plan = f.read()
    with open(os.path.join(svc.data_dir, 'service.log'), encoding='utf-8', errors='replace') as f:
        service_log = f.read()
    places = {'plan file': plan, 'service log': service_log}
    for index, result in enumerate(runs):
        places['run {} stdout'.format(index)] = result.stdout
        places['run {} stderr (--debug)'.format(index)] = result.stderr
    assert '$env:MY_SECRET' in plan  # the plan keeps the reference
    link_signatures = set()
    for text in places.values():
        link_signatures.update(SIGNATURE.findall(text))
    for what, value in (('secret', secret), ('storage key', storage_key), ('SAS signature', sas.rsplit('=', 1)[1]),
                        ('bearer token', svc.token)):
        leaks = [place for place, text in places.items() if value in text]
        assert leaks == [], '{} found in {}'.format(what, leaks)
    where = sorted(place for place, text in places.items() if SIGNATURE.search(text))
    assert link_signatures == set(), 'download-link signatures in {}'.format(where)


def test_urllib3_request_lines_lose_their_signatures(caplog):
    """The filter core/outputs/download.py puts on urllib3's request-line logger (unit level: the e2e test above
    needs az)."""
    import logging
    # pylint: disable-next=unused-import,import-outside-toplevel
    import azext_batchai_sweep.core.outputs.download  # noqa: F401
    with caplog.at_level(logging.DEBUG, logger='urllib3.connectionpool'):
        logging.getLogger('urllib3.connectionpool').debug('%s://%s:%s "%s %s %s" %s %s', 'http', 'h', 1, 'GET',
                                                          '/f?se=1&sig=abcdef0123456789&x=1', 'HTTP/1.1', 200, 5)
    assert 'sig=<redacted>&x=1' in caplog.text and 'abcdef0123456789' not in caplog.text
