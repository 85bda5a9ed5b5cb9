"""The versions `make test` resolved, printed at the top of every run (pytest's report header).

`make` installs the newest azure-cli, whose pins decide the SDKs the extension imports; a failure on a fresh machine
can then be tied to a release. docs/versions.md lists the versions last seen green (tests/packaging/
test_versions_doc.py keeps its package list the same as this one).
"""
import shutil
import subprocess
import sys
from importlib import metadata

# What the extension imports at run time (all shipped by azure-cli), then the test tools the results depend on.
RUNTIME = ('azure-cli', 'azure-cli-core', 'knack', 'azure-core', 'azure-mgmt-core', 'azure-mgmt-batchai',
           'azure-storage-blob', 'azure-storage-file-share', 'azure-mgmt-storage', 'azure-batch', 'azure-mgmt-batch',
           'msrest', 'PyYAML')
TEST_TOOLS = ('pytest', 'jsonschema', 'optuna')
# Programs the tests start: the command and the argument that prints its version.
PROGRAMS = (('slurmctld', '-V'), ('chromium', '--version'), ('node', '--version'))


def package_version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return 'not installed'


def program_version(command, flag):
    path = shutil.which(command) or shutil.which(command, path='/usr/sbin:/sbin')
    if path is None:
        return 'not installed'
    try:
        out = subprocess.run([path, flag], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as ex:
        return 'unknown ({})'.format(ex)
    words = (out.stdout or out.stderr).split()
    return next((word for word in words if word[:1].isdigit() or word[:2] in ('v1', 'v2')), 'unknown')


def header_lines():
    python = 'Python {}'.format(sys.version.split()[0])
    return ['resolved versions (docs/versions.md has the last seen green):',
            '  runtime: ' + ', '.join('{} {}'.format(name, package_version(name)) for name in RUNTIME),
            '  tests:   ' + ', '.join([python] + ['{} {}'.format(name, package_version(name)) for name in TEST_TOOLS]
                                      + ['{} {}'.format(command, program_version(command, flag))
                                         for command, flag in PROGRAMS])]
