"""Stand-in for the `az batchai sweep` commands the demo uses that are not in the command layer yet.

Temporary: scripts/demo.py runs a command through this file only when `az batchai sweep -h` does not list it, with
the same arguments; it goes once every command the demo uses exists. It calls the core library directly and
prints what the az command would (tables simplified). Service coordinates come from <data-dir>/service.json.
"""
import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
DATA_DIR = os.path.join(REPO, '.demo', 'data')

# pylint: disable=wrong-import-position
from azext_batchai_sweep.localservice import control  # noqa: E402


def _client():
    from azext_batchai_sweep.core.client import local_batchai_client
    info = control.status(DATA_DIR)
    if not info['running']:
        sys.exit('error: the local service is not running')
    return local_batchai_client(info['endpoint'], info['tokenFile'])


def _print(value, output, query):
    if query:
        import jmespath
        value = jmespath.search(query, value)
    if output == 'none':
        return
    if output == 'tsv':
        rows = value if isinstance(value, list) else [value]
        for row in rows:
            print('\t'.join(str(v) for v in (row.values() if isinstance(row, dict) else [row])))
    elif output == 'table':
        rows = value if isinstance(value, list) else [value]
        rows = [{k: v for k, v in row.items() if not isinstance(v, (dict, list))} if isinstance(row, dict)
                else {'Result': row} for row in rows]
        columns = list(rows[0]) if rows else []
        widths = [max([len(c)] + [len(str(r.get(c))) for r in rows]) for c in columns]
        print('  '.join(c.ljust(w) for c, w in zip(columns, widths)))
        print('  '.join('-' * w for w in widths))
        for row in rows:
            print('  '.join(str(row.get(c)).ljust(w) for c, w in zip(columns, widths)))
    else:
        print(json.dumps(value, indent=2))


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument('words', nargs='+')
    for name in ('-g', '-w', '-e', '-n', '--data-dir', '--plan-file', '--interval', '--job', '--tail', '--metric',
                 '--goal', '--top', '--query', '-o'):
        parser.add_argument(name)
    parser.add_argument('--wait', action='store_true')
    args = parser.parse_args(argv)
    command = ' '.join(args.words[2:])
    output = args.o or 'json'
    if command == 'local start':
        info = control.start_background(DATA_DIR)
        _print(info, output, args.query)
    elif command == 'local stop':
        control.stop(DATA_DIR)
    elif command == 'submit':
        from azext_batchai_sweep.core.experiment import submit_jobs
        from azext_batchai_sweep.core.plan import read_plan
        client = _client()
        client.experiments.begin_create(args.g, args.w, args.e).result()
        _, records = read_plan(args.plan_file)
        jobs = [(r['name'], r['job']['properties']) for r in records]
        _print(submit_jobs(client, args.g, args.w, args.e, jobs, parallel=8), output, args.query)
    elif command == 'status' and args.job:
        from azext_batchai_sweep.core.experiment import tail_job_output
        result = tail_job_output(_client(), args.g, args.w, args.e, args.job, lines=int(args.tail))
        print('\n'.join(result['lines']))
    elif command == 'status':
        from azext_batchai_sweep.core.experiment import sweep_status, wait_for_jobs
        client = _client()
        if args.wait:
            result = wait_for_jobs(client, args.g, args.w, args.e, sweep_name=args.n, interval=float(args.interval))
            _print(result, output, args.query)
        else:
            _print(sweep_status(client, args.g, args.w, args.e, sweep_name=args.n)['jobs'], output, args.query)
    elif command == 'metrics':
        from azext_batchai_sweep.core.experiment import MetricExtractor, get_metrics
        rows = get_metrics(_client(), args.g, args.w, args.e, MetricExtractor(metric_name=args.metric),
                           sweep_name=args.n, goal=args.goal, top=int(args.top) if args.top else None)
        if output == 'table' and not args.query:
            rows = [{'Name': r['name'], 'State': r['state'], **r['parameters'], args.metric: r['metric']}
                    for r in rows]
        _print(rows, output, args.query)
    else:
        sys.exit('error: no stand-in for az batchai sweep {}'.format(command))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
