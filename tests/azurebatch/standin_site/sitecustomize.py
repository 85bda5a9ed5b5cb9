"""TEST CODE ONLY: gives the local service that the real `az batchai sweep local start --scheduler azure-batch`
spawns the test stand-ins instead of what needs Azure, while the account lookup and the offline login
(ab-account's) are not wired in yet: the Batch account as found (endpoint of the lifecycle double), a token source
and the double's CA. Nothing else of the service or of az changes.

Active only where BATCHAI_TEST_STANDINS names a JSON file ({"endpoint", "token", "ca", "account", "repo"}) and
this folder is on PYTHONPATH (tests/azurebatch/e2e_fixtures.py sets both for the az runs of a test).
"""
import os


def _install():
    path = os.environ.get('BATCHAI_TEST_STANDINS')
    if not path:
        return
    import importlib.abc
    import sys

    target = 'azext_batchai_sweep.localservice.azurebatch.connect'

    class _Patch(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path_, target_=None):  # pylint: disable=unused-argument
            if fullname != target:
                return None
            from importlib.machinery import PathFinder
            spec = PathFinder.find_spec(fullname, path_)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _patch(module, path)
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Patch())


def _patch(module, path):
    import json
    import sys
    import time
    with open(path, encoding='utf-8') as f:
        settings = json.load(f)
    sys.path.insert(0, settings['repo'])
    from azext_batchai_sweep.localservice.azurebatch.auth import AzLoginCredential
    from azext_batchai_sweep.localservice.azurebatch.client import BatchApi
    original = module.connect

    def connect(store, data_dir, options):
        if options.get('batch_account') != settings['account']['batchAccount']:
            raise RuntimeError("Batch account '{}' was not found".format(options.get('batch_account')))
        # (the account lookup itself, through the real az's offline login and the ARM double, is ab-account's
        # tests/azurebatch/test_account_login.py)
        credential = AzLoginCredential(source=lambda: (settings['token'], time.time() + 3600))
        return original(store, data_dir, dict(
            options, account_info=settings['account'], credential=credential, facts=None,
            api=BatchApi(settings['endpoint'], credential, connection_verify=settings['ca']),
            poll_seconds=options.get('poll_seconds') or 0.2))
    module.connect = connect


_install()
