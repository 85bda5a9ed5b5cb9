"""No import circle in the package: no module depends, through its imports, on a module that depends back on it.

Both module-level and function-level imports count. A function-level import avoids the crash of a circle at import
time, not the circle: the two modules still need each other, so neither can be read, tested or moved alone (that is
how the circles this test was written against grew: a lazy import back up to the module that imports you).

What an import depends on, as Python runs it:
- `import a.b.c`, `from a.b import c` (c a module): the module a.b.c; `from a.b import name`: the module a.b (a
  package: its __init__.py);
- and each package on the way (a, a.b), whose __init__.py runs first, unless the importer is inside it: a module's
  own packages have always started before it does, so `from ..errors import X` in core/spec/ does not make core/spec
  depend on core/__init__.py (only an explicit `from .. import X` does).
The source is read, not imported (ast): every import counts, whichever branch or function holds it.
"""
import ast
import os

import pytest

PACKAGE = 'azext_batchai_sweep'
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), PACKAGE)

# Circles there today, each the set of modules that depend on each other: none since the local service's Azure Batch
# storage became one sub-package (issue 45). An entry may only shrink: a circle that grows, or a new one, fails; an
# entry no longer there fails too (test_known_circles_are_still_there), so that the set is emptied as circles go.
KNOWN_CIRCLES = []


def package_modules(package_dir):
    """{dotted module name: (path, is_package)} of every .py file under package_dir."""
    root = os.path.dirname(package_dir)
    modules = {}
    for folder, folders, files in os.walk(package_dir):
        folders[:] = sorted(f for f in folders if f != '__pycache__')
        for file_name in files:
            if not file_name.endswith('.py'):
                continue
            path = os.path.join(folder, file_name)
            parts = os.path.relpath(path, root)[:-len('.py')].split(os.sep)
            is_package = parts[-1] == '__init__'
            modules['.'.join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _parents(name):
    parts = name.split('.')
    return ['.'.join(parts[:i]) for i in range(1, len(parts))]


def _imported(node, importer, is_package, modules):
    """The package modules an Import/ImportFrom node names (the module itself, or the package it imports from)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in modules:  # `import a.b.C`-style names beyond a module: the module
                name = name.rpartition('.')[0]
            if name:
                yield name
        return
    if node.level:
        base = (importer if is_package else importer.rpartition('.')[0]).split('.')
        base = base[:len(base) - node.level + 1]
        source = '.'.join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    for alias in node.names:
        submodule = '{}.{}'.format(source, alias.name)
        if submodule in modules:
            yield submodule
        elif source in modules:
            yield source


def import_graph(package_dir):
    """{module: {module it depends on: [line, ...]}} within the package (see the module docstring)."""
    modules = package_modules(package_dir)
    graph = {}
    for importer, (path, is_package) in modules.items():
        with open(path, encoding='utf-8') as source:
            tree = ast.parse(source.read(), path)
        started = set(_parents(importer)) | ({importer} if is_package else set())
        edges = graph[importer] = {}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(node, importer, is_package, modules):
                for module in [target] + [p for p in _parents(target) if p in modules and p not in started]:
                    if module != importer:
                        edges.setdefault(module, set()).add(node.lineno)
    return {module: {target: sorted(lines) for target, lines in edges.items()} for module, edges in graph.items()}


def import_circles(graph):
    """The circles: each a frozenset of modules that all reach each other (strongly connected, Tarjan's)."""
    index, low, on_stack, stack, circles = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    circles.append(frozenset(members))
    return circles


def describe(circle, graph):
    return '\n'.join('  {} -> {} (line {})'.format(module, target, ', '.join(map(str, graph[module][target])))
                     for module in sorted(circle) for target in sorted(graph[module]) if target in circle)


def test_no_import_circle_in_the_package():
    graph = import_graph(PACKAGE_DIR)
    assert '{}.core.tuning.loop'.format(PACKAGE) in graph and '{}.custom'.format(PACKAGE) in graph
    new = [c for c in import_circles(graph) if not any(c <= known for known in KNOWN_CIRCLES)]
    assert not new, 'import circles:\n' + '\n\n'.join(describe(c, graph) for c in new)


def test_known_circles_are_still_there():
    circles = import_circles(import_graph(PACKAGE_DIR))
    gone = [sorted(known) for known in KNOWN_CIRCLES if not any(c & known for c in circles)]
    assert not gone, 'no longer a circle: remove it from KNOWN_CIRCLES: {}'.format(gone)


# The detector itself, on small packages written for it: each circle form is found, and the ordinary forms are not.

def _write_package(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


@pytest.mark.parametrize('files, circle', [
    ({'__init__.py': '', 'a.py': 'from .b import x\n', 'b.py': 'from .a import y\n'}, {'a', 'b'}),
    # function-level, one side only
    ({'__init__.py': '', 'a.py': 'from .b import x\n', 'b.py': 'def f():\n    from .a import y\n'}, {'a', 'b'}),
    # three modules, absolute imports, one inside a try
    ({'__init__.py': '', 'a.py': 'import pkg.b\n', 'b.py': 'from pkg import c\n',
      'c.py': 'try:\n    from pkg.a import z\nexcept ImportError:\n    pass\n'}, {'a', 'b', 'c'}),
    # through a package's __init__, which runs first when a module outside it imports one of its modules
    ({'__init__.py': '', 'settings.py': 'def f():\n    from .sub.model import M\n',
      'sub/__init__.py': 'from ..settings import X\n', 'sub/model.py': ''}, {'settings', 'sub'}),
    # an explicit import of the package a module is in
    ({'__init__.py': 'from .a import A\n', 'a.py': 'from . import B\n'}, {'', 'a'}),
])
def test_the_detector_finds_each_form_of_circle(tmp_path, files, circle):
    graph = import_graph(_write_package(tmp_path / 'pkg', files))
    names = {'.'.join(['pkg'] + ([m] if m else [])) for m in circle}
    assert import_circles(graph) == [frozenset(names)]


def test_the_detector_leaves_ordinary_packages_alone(tmp_path):
    package = _write_package(tmp_path / 'pkg', {
        # a package that re-exports its modules, whose modules import each other one way and reach up for errors
        '__init__.py': 'from .spec.sweep import Sweep\nfrom .errors import Error\n',
        'errors.py': '',
        'spec/__init__.py': 'from .sweep import Sweep\n',
        'spec/sweep.py': 'from ..errors import Error\nfrom .naming import name\n',
        'spec/naming.py': 'import os\nfrom ..errors import Error\n\ndef f():\n    from pkg.errors import Error\n',
        'tuning/__init__.py': '',
        'tuning/loop.py': 'from ..spec import sweep\nfrom ..spec.naming import name\nimport json\n',
    })
    graph = import_graph(package)
    assert graph['pkg.tuning.loop'] == {'pkg.spec.sweep': [1], 'pkg.spec': [1, 2], 'pkg.spec.naming': [2]}
    assert import_circles(graph) == []
