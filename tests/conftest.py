"""Shared test fixtures, one plugin module per concern.

- fixtures_az:      a temporary AZURE_CONFIG_DIR and a runner for the real `az` executable
- fixtures_azurite: Azurite (Blob) from ./node_modules, started once per session on a free loopback port (and
                    azurite_oauth: over HTTPS with OAuth, for the tests that start it)
- fixtures_service: the local Batch AI service, started once per session on a free loopback port
- fixtures_blob:    the session service's Blob endpoint (local_blob), and blob_store: Azurite, then the local endpoint
- parallel:         how `make test`'s pytest-xdist workers share the suite (groups, what is made once per run)
"""
pytest_plugins = [
    'tests.fixtures_az',
    'tests.fixtures_azurite',
    'tests.fixtures_blob',
    'tests.fixtures_service',
    'tests.parallel',
]


def pytest_report_header(config):  # pylint: disable=unused-argument
    from tests.resolved_versions import header_lines
    return header_lines()
