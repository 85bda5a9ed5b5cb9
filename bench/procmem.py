"""The peak memory of a child process, measured on the child itself.

`os.wait4`'s `ru_maxrss` is no good for this: Linux carries the high-water mark of the process a child was forked
from into the child's usage (it is recorded when the child execs), so a 31 MB `az version` started by a 300 MB
parent reports 311 MB. `VmHWM` in /proc/<pid>/status is the high-water mark of the child's own memory since it
exec'd; it is polled while the child runs (every 10 ms: a peak within the last poll interval before exit is missed).
"""
import subprocess
import time


def vm_hwm_kb(pid):
    """VmHWM (peak resident set since exec) of a live process in kB, or None when it is gone or a zombie."""
    try:
        with open('/proc/{}/status'.format(pid), encoding='ascii') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def run_measured(cmd, interval=0.01, timeout=None, **popen_kwargs):
    """Run `cmd` to its end; return (returncode, wall seconds, peak RSS in MB of that process)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, **popen_kwargs)  # pylint: disable=consider-using-with
    peak_kb = 0
    while proc.poll() is None:
        peak_kb = max(peak_kb, vm_hwm_kb(proc.pid) or 0)
        if timeout is not None and time.monotonic() - started > timeout:
            proc.kill()
            proc.wait()
            raise subprocess.TimeoutExpired(cmd, timeout)
        time.sleep(interval)
    return proc.returncode, time.monotonic() - started, peak_kb / 1024.0
