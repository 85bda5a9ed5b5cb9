"""The local service's layout as its docstrings describe it (issue 45): the three schedulers are one family under
schedulers/, and no module reaches into another's private names (read from the source with ast, imports inside
functions included). No import circle, here or anywhere in the package: tests/packaging/test_import_circles.py."""
import ast
import os

from azext_batchai_sweep.localservice.schedulers.scheduler import Scheduler

PACKAGE = 'azext_batchai_sweep'
SERVICE = PACKAGE + '.localservice'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _modules():
    """{dotted name: (path, is a package)} of every module of the local service."""
    found = {}
    for folder, _, names in os.walk(os.path.join(ROOT, *SERVICE.split('.'))):
        for name in names:
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
                is_package = dotted.endswith('.__init__')
                found[dotted[:-len('.__init__')] if is_package else dotted] = (path, is_package)
    return found


def _imports(name, path, is_package, modules):
    """[(imported module, imported names)] of every `import`/`from ... import` in a module, at any depth."""
    package = name if is_package else name.rpartition('.')[0]
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1 if node.level else 0):
                base = base.rpartition('.')[0]
            target = (base + ('.' + node.module if node.module else '')) if node.level else node.module
            names = [a.name for a in node.names]
            submodules = [target + '.' + n for n in names if target + '.' + n in modules]
            found += [(m, []) for m in submodules]
            found.append((target, [n for n in names if target + '.' + n not in modules]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
    return [(target, names) for target, names in found if target in modules]


def _graph():
    modules = _modules()
    return {name: _imports(name, path, is_package, modules) for name, (path, is_package) in modules.items()}


def test_no_module_imports_another_modules_private_names():
    private = sorted('{} imports {} from {}'.format(name, n, target)
                     for name, imports in _graph().items() for target, names in imports
                     for n in names if target != name and n.startswith('_') and not n.startswith('__'))
    assert private == []


def test_the_three_schedulers_are_one_family_under_schedulers():
    from azext_batchai_sweep.localservice.schedulers.azurebatch.scheduler import AzureBatchScheduler
    from azext_batchai_sweep.localservice.schedulers.processes.runner import Runner
    from azext_batchai_sweep.localservice.schedulers.slurm.scheduler import SlurmScheduler
    family = {cls.name: cls for cls in (Runner, SlurmScheduler, AzureBatchScheduler)}
    assert all(issubclass(cls, Scheduler) for cls in family.values())
    assert sorted(family) == ['azure-batch', 'processes', 'slurm']  # the names `--scheduler` takes
    for name in ('scheduler', 'launcher', 'jobenv', 'gpus'):  # what the family shares, beside it
        assert os.path.isfile(os.path.join(ROOT, PACKAGE, 'localservice', 'schedulers', name + '.py'))
