"""The local service's layout as its docstrings describe it (issue 45): the three schedulers are one family under
schedulers/, no module reaches into another's private names, and no two modules import each other, not even
through an import inside a function (what a lazy import hides at start still runs later). Read from the source
(ast), so a new circle or private import fails here before it fails anywhere else."""
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


def circles(graph):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_in_the_local_service_not_even_inside_functions():
    graph = {name: {t for t, _ in imports if t != name} for name, imports in _graph().items()}
    assert len(graph) >= 60 and SERVICE + '.schedulers.azurebatch.storage.share_reader' in graph
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle_through_a_lazy_import():
    # What the test above relies on: a circle of three, one edge of it a function-level import, is found.
    graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}
    assert circles(graph) == [['a', 'b', 'c']]
    assert circles({'a': {'b'}, 'b': set()}) == []


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
