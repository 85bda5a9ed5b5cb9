"""Many az commands in one process: az's own entry point (`get_default_cli().invoke`), without 1 s of start-up each.

Run as `python -m tests.reliability.az_inprocess` with a JSON list of runs on stdin, each
`{"argv": [...], "env": {...}, "cwd": "..."}`; prints a JSON list of `{"exit_code", "stdout", "stderr", "error_class"}`.
It runs in a subprocess of the test (never inside pytest) because az reads AZURE_CONFIG_DIR and sets up logging
once per process; the parent gives it a temporary config dir, like the real executable gets in tests/fixtures_az.py.

stdout and stderr are captured at the file-descriptor level, so whatever az, knack or a library prints, by whatever
handler, is in the result. error_class is the azclierror class az's exception handler reports (recorded by wrapping
azure.cli.core.util.handle_exception, which az looks up on every failure; the handling itself is unchanged).
"""
import io
import json
import os
import subprocess
import sys
import tempfile

from tests.fixtures_az import REPO_ROOT, base_env


def run_many(runs, config_dir, timeout=600, env=None):
    """Run the az invocations in one fresh subprocess; returns one result dict per run."""
    proc_env = base_env(config_dir, env)
    proc = subprocess.run([sys.executable, '-m', 'tests.reliability.az_inprocess'], input=json.dumps(runs),
                          capture_output=True, text=True, env=proc_env, cwd=REPO_ROOT, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise AssertionError('in-process az runner failed ({}):\n{}'.format(proc.returncode, proc.stderr[-4000:]))
    return json.loads(proc.stdout.splitlines()[-1])


class _Capture:
    """Redirect fds 1 and 2 to temporary files for one invocation."""

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
        self.saved = [os.dup(1), os.dup(2)]
        for fd, f in zip((1, 2), self.files):
            os.dup2(f.fileno(), fd)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)
        self.text = []
        for f in self.files:
            f.seek(0)
            self.text.append(f.read().decode('utf-8', errors='replace'))
            f.close()
        return False


def _invoke(argv, env, cwd):
    from azure.cli.core import get_default_cli
    import azure.cli.core.util as az_util

    seen = []
    original = az_util.handle_exception

    def recording(ex):
        seen.append(type(ex).__name__)
        return original(ex)

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    os.environ.update(env or {})
    if cwd:
        os.chdir(cwd)
    az_util.handle_exception = recording
    try:
        with _Capture() as capture:
            try:
                code = get_default_cli().invoke(argv, out_file=sys.stdout)
            except SystemExit as ex:  # argparse errors exit
                code = ex.code if isinstance(ex.code, int) else 1
    finally:
        az_util.handle_exception = original
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return {'exit_code': code, 'stdout': capture.text[0], 'stderr': capture.text[1],
            'error_class': seen[0] if seen else None}


def main():
    runs = json.load(sys.stdin)
    real_stdout = os.fdopen(os.dup(1), 'w')
    # knack writes to sys.stdout; make it a text stream over fd 1 so the capture sees it.
    sys.stdout = io.TextIOWrapper(os.fdopen(1, 'wb', closefd=False), encoding='utf-8', line_buffering=True)
    results = [_invoke(run['argv'], run.get('env'), run.get('cwd')) for run in runs]
    real_stdout.write('\n' + json.dumps(results) + '\n')
    real_stdout.flush()


if __name__ == '__main__':
    main()
