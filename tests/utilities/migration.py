"""Running the old `utilities` examples as a migrating user would: the code as published, import lines changed.

`migrate(code)` is the whole migration: in `import utilities...` / `from utilities... import` lines, `utilities`
becomes `azext_batchai_sweep.utilities`, and the legacy storage imports (`from azure.storage.blob import
BlockBlobService`, `from azure.storage.file import FileService`) import the notebook-compatibility layer's classes
(`azext_batchai_sweep.utilities.storage`); no other line is touched (it returns the changed lines so tests can show
that). The examples themselves are test data in tests/utilities/data/, copied from microsoftarchive/BatchAI (MIT,
data/LICENSE-BatchAI.txt).
"""
import os
import re
import warnings

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
NEW_PACKAGE = 'azext_batchai_sweep.utilities'
_IMPORT_LINE = re.compile(r'^(\s*)(import|from)(\s+)utilities(?=[\s.])', re.MULTILINE)
# `from azure.storage.blob import BlockBlobService` / `from azure.storage.file import FileService` (the legacy SDK).
_LEGACY_STORAGE_IMPORT = re.compile(r'^(\s*)from\s+azure\.storage\.(?:blob|file)\s+import\s+(?=[\w ,]*\b'
                                    r'(?:BlockBlobService|FileService)\b)', re.MULTILINE)


def migrate(code):
    """(migrated code, [(old line, new line)]): only import lines of the old package change."""
    changed = []

    def replace(match):
        return '{}{}{}{}'.format(match.group(1), match.group(2), match.group(3), NEW_PACKAGE)
    migrated = _IMPORT_LINE.sub(replace, code)
    migrated = _LEGACY_STORAGE_IMPORT.sub(r'\1from {}.storage import '.format(NEW_PACKAGE), migrated)
    for old, new in zip(code.splitlines(), migrated.splitlines()):
        if old != new:
            changed.append((old, new))
    return migrated, changed


def readme_blocks(version):
    """The ``` code blocks of the Job Factory and Experiment Utilities sections of README version 1 or 2."""
    with open(os.path.join(DATA, 'utilities_readme_v{}.md'.format(version)), encoding='utf-8') as f:
        return re.findall(r'```\n(.*?)```', f.read(), re.S)


def notebook_cells(name):
    """{index: source} of the code cells of a recipe notebook (data/<name>.cells.txt)."""
    with open(os.path.join(DATA, '{}.cells.txt'.format(name)), encoding='utf-8') as f:
        text = f.read()
    parts = re.split(r'^# %% cell (\d+)\n', text, flags=re.MULTILINE)
    return {int(parts[i]): parts[i + 1] for i in range(1, len(parts), 2)}


def run(code, namespace):
    """exec the migrated code in `namespace`; returns the namespace."""
    migrated, _ = migrate(code)
    with warnings.catch_warnings():
        # The notebooks' regex '\%' is an invalid escape for today's Python; it still means '%'.
        warnings.simplefilter('ignore', (DeprecationWarning, SyntaxWarning))
        compiled = compile(migrated, '<example>', 'exec')
    exec(compiled, namespace)  # pylint: disable=exec-used
    return namespace


def evaluate(expression, namespace):
    """eval one expression of an example (a parameter specification, a method call shown as a signature)."""
    migrated, _ = migrate(expression)
    # The README's comments after an expression ("# will generate [...]") are not part of it.
    return eval(compile(migrated.strip(), '<example>', 'eval'), namespace)  # pylint: disable=eval-used
