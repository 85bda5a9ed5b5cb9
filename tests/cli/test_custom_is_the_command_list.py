"""custom.py reads as the list of commands (az's convention): every function it defines is one commands.py
registers, and what the commands share lives in the modules beside it (docs/architecture.md), so it stays short.

Read from the source (ast), as the circle test reads it: no az needed.
"""
import ast
import os

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           'azext_batchai_sweep')
MAX_LINES = 500


def _tree(name):
    with open(os.path.join(PACKAGE_DIR, name), encoding='utf-8') as source:
        text = source.read()
    return text, ast.parse(text)


def registered_commands():
    """The custom.py functions commands.py registers (`g.custom_command(NAME, FUNCTION, ...)`)."""
    _, tree = _tree('commands.py')
    return {node.args[1].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, 'attr', None) == 'custom_command'}


def test_custom_defines_only_the_commands():
    _, tree = _tree('custom.py')
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    registered = registered_commands()
    assert {'create_sweep', 'run_sweep', 'sweep_report', 'local_start'} <= registered
    assert defined - registered == set(), 'helpers belong beside custom.py, not in it'
    assert registered - defined == set(), 'commands.py registers functions custom.py lacks'


def test_custom_stays_short():
    text, _ = _tree('custom.py')
    assert len(text.splitlines()) < MAX_LINES
