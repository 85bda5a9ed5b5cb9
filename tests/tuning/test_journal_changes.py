"""The run's journal writes what changed (issue 44): a save appends its change to the file, the file is written whole
at a journal's first save and when the changes outgrow it, and what a reader gets is the journal as the run holds
it, whatever the save it reads after; a line cut short by a crash is skipped. Counted, never timed."""
import json
import os

from azext_batchai_sweep.core.tuning.journal import COMPACT_MIN_BYTES, Journal, read_journal


def _row(i, decision='stopped'):
    return {'decision': decision, 'best': i / 7, 'reason': 'rung 0 \u2264 0.5', 'step': i % 10}


def _grow(journal, start, count):
    for i in range(start, start + count):
        journal.data['rows']['job-{}'.format(i)] = _row(i)
        journal.data['judged']['job-{}'.format(i)] = 3


def test_a_save_writes_the_jobs_that_changed_whatever_the_journal_holds(tmp_path):
    per_save = {}
    for held in (200, 2000):
        path = str(tmp_path / 'j{}.run.json'.format(held))
        journal = Journal(path)
        _grow(journal, 0, held)
        journal.save()  # the first save: the whole journal
        assert journal.bytes_written == os.path.getsize(path)
        written = []
        for poll in range(5):
            before = journal.bytes_written
            _grow(journal, held + 2 * poll, 2)  # two jobs finished
            journal.data['rows']['job-0'] = _row(0, 'ran to the end')  # one changed
            journal.data['figures'] = {'jobs': held + 2 * poll + 2}
            journal.save()
            written.append(journal.bytes_written - before)
        per_save[held] = written
        assert read_journal(path) == journal.data == Journal(path).data
    # the same change writes the same bytes at 10 times the jobs (names one digit longer)
    assert all(large <= small + 16 for small, large in zip(per_save[200], per_save[2000])), per_save
    assert max(per_save[2000]) < 600


def test_nothing_changed_nothing_written_and_a_drop_is_written(tmp_path):
    path = str(tmp_path / 's.run.json')
    journal = Journal(path)
    _grow(journal, 0, 50)
    journal.data['stoppedOnExit'] = ['job-1']
    journal.save()
    size = os.path.getsize(path)
    journal.save()
    assert os.path.getsize(path) == size
    del journal.data['rows']['job-3']           # a job's entry dropped (resubmit: a new attempt)
    journal.data['stoppedOnExit'].remove('job-1')  # a list changed in place
    journal.data['attempts'] = {'job-4': 't1'}  # a new section
    journal.save()
    assert read_journal(path) == journal.data
    assert 'job-3' not in read_journal(path)['rows'] and read_journal(path)['stoppedOnExit'] == []


def test_the_file_is_compacted_so_it_stays_near_the_journal_size(tmp_path):
    path = str(tmp_path / 'c.run.json')
    journal = Journal(path)
    journal.save()
    whole = []
    for i in range(3000):
        _grow(journal, i, 1)
        journal.data['figures'] = {'jobs': i + 1}
        journal.save()
        with open(path, encoding='utf-8') as f:
            first = f.readline()
        whole.append(len(first))
    size = os.path.getsize(path)
    compact = len(json.dumps(journal.data, separators=(',', ':'))) + 1
    assert size <= 2 * compact + COMPACT_MIN_BYTES
    assert len(set(whole)) > 3  # written whole again a few times as it grew
    # Over the whole run, the bytes written stay a small multiple of the journal's (every change once, each whole
    # write at most once per doubling): the sum of a rewrite at every save would be about 1,500 times it.
    assert journal.bytes_written < 8 * compact + 3000 * 200
    assert read_journal(path) == journal.data


def test_a_line_cut_short_is_skipped_and_the_next_run_writes_whole(tmp_path):
    path = str(tmp_path / 'k.run.json')
    journal = Journal(path)
    _grow(journal, 0, 10)
    journal.save()
    _grow(journal, 10, 1)
    journal.save()
    with open(path, 'a', encoding='utf-8') as f:
        f.write('{"set":{"rows":{"job-99":')  # killed in the middle of a save
    again = Journal(path)
    assert set(again.data['rows']) == {'job-{}'.format(i) for i in range(11)}
    again.data['rows']['job-11'] = _row(11)
    again.save()  # a journal's first save writes the file whole: no change lands after the cut line
    with open(path, encoding='utf-8') as f:
        assert len(f.read().splitlines()) == 1
    assert set(Journal(path).data['rows']) == {'job-{}'.format(i) for i in range(12)}


def test_a_journal_of_one_json_object_is_read(tmp_path):
    """A journal written before changes were appended (version 1: the whole object, rewritten at every save)."""
    path = str(tmp_path / 'old.run.json')
    data = {'version': 1, 'judged': {'a': 1}, 'decisions': {}, 'complete': {}, 'rows': {'a': _row(1)},
            'figures': {'jobs': 1}}
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(data, f)
    held = Journal(path).data
    assert held['rows'] == data['rows'] and held['judged'] == {'a': 1} and held['figures'] == {'jobs': 1}
