"""`az batchai sweep run` SIGKILLed at 10 points of a 127-job Hyperband sweep (eta 4, 1 to 64 epochs), run again each
time (twice with its journal deleted): no job duplicated, none lost, never more than maxConcurrentJobs at once, and
the same Hyperband decisions as an unkilled run of the same sweep. `make test` runs the 22-job, 3-kill version
(tests/tuning/test_run_e2e.py). Figures: docs/reliability.md.
"""
import time
import uuid

import pytest

from tests.fixtures_az import AZ, base_env, service_az, service_env
from tests.tuning.run_helpers import Watcher, hyperband_decisions, kill_and_resume, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service, pytest.mark.soak]

SECTIONS = ['sampling: {type: hyperband, resource: EPOCHS, minResource: 1, maxResource: 64, eta: 4, seed: 9}',
            'limits: {maxConcurrentJobs: 4, maxTotalJobs: 200}']
QUALITIES = [round(0.3 + 0.005 * i, 3) for i in range(120)]
KILL_POINTS = (1, 8, 20, 35, 50, 64, 80, 95, 110, 120)


def run_args(service, experiment, sweep, spec):
    return ['batchai', 'sweep', 'run', '-g', service.resource_group, '-w', service.workspace, '-e', experiment,
            '-n', sweep, '--spec', spec, '-c', service.cluster, '--poll-interval', '0.3', '-o', 'json']


@pytest.mark.timeout(1200)
def test_run_killed_ten_times_keeps_its_decisions(local_service, batchai_client, tmp_path):
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    experiment = 'soak-run-' + uuid.uuid4().hex[:6]
    outcomes = {}
    for sweep in ('whole', 'killed'):
        spec = write_sweep(directory, sweep, SECTIONS, QUALITIES, sleep=0.01)
        started = time.monotonic()
        with Watcher(batchai_client, local_service, experiment, sweep) as watcher:
            kills = 0
            if sweep == 'killed':
                command = [AZ] + run_args(local_service, experiment, sweep, spec)
                env = base_env(az.config_dir, service_env(local_service))
                kills = kill_and_resume(command, env, directory, watcher, KILL_POINTS, az.config_dir, sweep,
                                        delete_journal_at=(35, 95), timeout=300)
            final = az(*run_args(local_service, experiment, sweep, spec), timeout=900)
        assert final.exit_code == 0, final.stderr
        jobs = watcher.jobs()
        outcomes[sweep] = final.json(), jobs, watcher.most, kills
        print('{}: {} jobs, {} kills, most at once {}, {:.0f} s'.format(sweep, len(jobs), kills, watcher.most,
                                                                        time.monotonic() - started))
    (whole, whole_jobs, whole_most, _), (killed, killed_jobs, killed_most, kills) = outcomes['whole'], \
        outcomes['killed']
    assert kills == len(KILL_POINTS)
    assert len(whole_jobs) == 127 and whole['jobs'] == 127
    assert len(killed_jobs) == len({job.name for job in killed_jobs}) == 127
    assert whole_most <= 4 and killed_most <= 4
    assert hyperband_decisions(killed_jobs) == hyperband_decisions(whole_jobs)
    for key in ('decisions', 'ended', 'counts'):
        assert killed[key] == whole[key], key
    assert killed['best']['parameters'] == whole['best']['parameters']
