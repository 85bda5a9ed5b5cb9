"""Run a Batch AI recipe notebook's code cells as a migrating user would: import lines changed, configuration.json
holding the local service's values, nothing else.

A notebook is test data (data/<name>.cells.txt: its code cells, verbatim, from microsoftarchive/BatchAI at its last
commit; MIT, data/LICENSE-BatchAI.txt). Committing the cells rather than a description of them is what lets the tests
run the notebooks as written; the MIT licence allows the copy with its notice, which sits beside them. The training
scripts are this project's stand-ins (data/*_standin.py: same command lines and log formats, no GPU framework).

The notebook runs in the folder layout of the original repository: `recipes/configuration.json`, the notebook's
folder `recipes/<area>/<recipe>/` as the working directory (cell 0 reads '../../configuration.json'), and the files
the recipe folder holds (or that an earlier run downloaded there) put in place by the test.
"""
import contextlib
import io
import json
import os
import shutil
import traceback
import warnings
from dataclasses import dataclass

from tests.utilities.migration import DATA, migrate, notebook_cells


@dataclass
class Recipe:
    name: str  # data/<name>.cells.txt
    folder: str  # the notebook's folder under recipes/
    workspace: str  # configuration.json's workspace for this notebook
    files: dict  # {path relative to the notebook's folder: stand-in file in data/} (what the folder holds)


@dataclass
class CellRun:
    index: int
    ok: bool
    error: str
    output: str


# The account of configuration.json, as the recipes name it; any name is an account of the local service.
STORAGE_ACCOUNT = 'recipestorage'


def configuration(service, workspace):
    """configuration.json of a notebook run on the local service, filled in with what `local start` and `local
    show-connection-string` give: base_url is the service's endpoint, the storage account's key is the service's.
    Nothing else: no endpoint of its own for Blob or Files (the local service serves both)."""
    with open(os.path.join(service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    return {
        'subscription_id': '00000000-0000-0000-0000-000000000000', 'aad_client_id': '', 'aad_secret': '',
        'aad_tenant': '', 'location': 'eastus', 'base_url': service.endpoint, 'resource_group': 'batchai.recipes',
        'workspace': workspace,
        'storage_account': {'name': STORAGE_ACCOUNT, 'key': key},
        'admin_user': {'name': 'demoUser', 'password': 'Dem0Pa$$w0rd', 'ssh_public_key': ''},
        'keyvault_id': '', 'container_registry': {'user': '', 'password': '', 'secret_url': ''}}


def lay_out(root, recipe, config):
    """Write recipes/configuration.json and the recipe folder's files under `root`; return the notebook's folder."""
    recipes = os.path.join(root, 'recipes')
    folder = os.path.join(recipes, recipe.folder)
    os.makedirs(folder)
    with open(os.path.join(recipes, 'configuration.json'), 'w', encoding='utf-8') as f:
        json.dump(config, f, indent=4)
    for relative, source in recipe.files.items():
        target = os.path.normpath(os.path.join(folder, relative))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if source is None:  # a dataset file an earlier run extracted: content does not matter
            with open(target, 'w', encoding='utf-8') as f:
                f.write('{}\n'.format(os.path.basename(target)) * 20)
        else:
            shutil.copy(os.path.join(DATA, source), target)
    return folder


def run_cells(recipe, after=None):
    """Execute every non-empty code cell in order, in one namespace, as Jupyter would; a failing cell is recorded
    (its exception) and the next one runs. `after(index, namespace)`, when given, is called after each cell (to look
    at the service before a later cell deletes what the notebook made). Returns ([CellRun], namespace)."""
    namespace = {'__name__': '__main__'}
    runs = []
    for index, code in sorted(notebook_cells(recipe.name).items()):
        if not code.strip():
            continue  # the notebooks' trailing empty cell
        migrated, _ = migrate(code)
        output = io.StringIO()
        error = ''
        with contextlib.redirect_stdout(output), warnings.catch_warnings():
            # The notebooks' regex '\%' is an invalid escape for today's Python; it still means '%'.
            warnings.simplefilter('ignore', (DeprecationWarning, SyntaxWarning))
            try:
                exec(compile(migrated, '<{} cell {}>'.format(recipe.name, index), 'exec'),  # pylint: disable=exec-used
                     namespace)
            except Exception as exc:  # pylint: disable=broad-except  # a failing cell is what is being counted
                error = '{}: {}'.format(type(exc).__name__, exc)
                output.write(traceback.format_exc(limit=-3))
        runs.append(CellRun(index, not error, error, output.getvalue()))
        if after is not None:
            after(index, namespace)
    return runs, namespace
