"""The loopback rule shared by the client (plain http only to this machine) and the service (bind)."""
import pytest

from azext_batchai_sweep.core.service.loopback import is_loopback


@pytest.mark.parametrize('host, expected', [
    ('localhost', True), ('127.0.0.1', True), ('127.9.8.7', True), ('::1', True),
    ('10.0.0.1', False), ('0.0.0.0', False), ('example.com', False), ('', False), ('localhost.evil.com', False),
])
def test_is_loopback(host, expected):
    assert is_loopback(host) is expected
