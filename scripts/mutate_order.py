"""pytest plugin of `make mutate` (scripts/mutate.py loads it with -p in each module's copy): a mutant's tests run
fastest first, so that a mutant one quick test kills stops there (-x) instead of after whichever slow tests came
first.

mutmut 3 runs, for each mutant, the tests that called the mutated function (its stats run recorded which, and each
test's time, in mutants/mutmut-stats.json) in the order of a Python set: arbitrary, often a hypothesis or az-driven
test of seconds before the unit test that fails at once. The same tests run either way: a surviving mutant still
runs every one of them, so nothing is checked less. Tests stay grouped by file (a module's fixtures are set up once),
the files ordered by their fastest test. MUTATE_TEST_ORDER=as-given turns it off (to measure what it saves).
"""
import json
import os



def _durations():
    """{test id: seconds of its call} from mutmut's stats run (mutants/mutmut-stats.json, read from the module's
    copy or from mutants/, where the workers run pytest); {} before that run."""
    for path in ('mutmut-stats.json', os.path.join('mutants', 'mutmut-stats.json')):
        try:
            with open(path, encoding='utf-8') as f:
                return json.load(f).get('duration_by_test', {})
        except (OSError, ValueError):
            continue
    return {}


def pytest_collection_modifyitems(session, config, items):  # pylint: disable=unused-argument
    # only a mutant's run (not mutmut's stats run, its forced failure, nor a plain pytest of the copy)
    if os.environ.get('MUTATE_TEST_ORDER') == 'as-given' or os.environ.get('MUTANT_UNDER_TEST') in (None, '', 'stats',
                                                                                                   'fail'):
        return
    durations = _durations()
    if not durations:
        return
    unknown = max(durations.values(), default=0.0)  # a test the stats run did not time: as slow as the slowest
    seconds = {item.nodeid: durations.get(item.nodeid, unknown) for item in items}
    fastest_of_file = {}
    for item in items:
        path = item.nodeid.split('::', 1)[0]
        fastest_of_file[path] = min(fastest_of_file.get(path, seconds[item.nodeid]), seconds[item.nodeid])
    position = {id(item): n for n, item in enumerate(items)}
    items.sort(key=lambda item: (fastest_of_file[item.nodeid.split('::', 1)[0]], item.nodeid.split('::', 1)[0],
                                 seconds[item.nodeid], position[id(item)]))

