"""A real sweep on the session's local service, run through az, and its report: shared by the report's tests.

The sweep is a seeded random search of 12 jobs over a log-scale learning rate, a number of units and an optimizer;
each job runs train.py below, which prints `epoch=N loss=.. val_accuracy=..` for 8 epochs along a curve whose
ceiling its parameters set, and the (sgd, 4 units) jobs fail after 3 epochs. Made once per session: the tests only
read it.
"""
import json
import os
import uuid
from dataclasses import dataclass

import pytest

from tests.fixtures_az import AzRunner, service_az

SWEEP = 'curves'
TRAIN = '''
import math, sys
lr, units, opt = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
top = 0.95 - 0.08 * (math.log10(lr) + 1) ** 2 - 0.4 / units - (0.03 if opt == 'sgd' else 0.0)
print('training lr=%s units=%s opt=%s' % (lr, units, opt))
for epoch in range(1, 9):
    print('epoch=%d loss=%.4f val_accuracy=%.4f' % (epoch, 1 - top * (1 - math.exp(-epoch / 3)),
                                                    top * (1 - math.exp(-epoch / 3))), flush=True)
    if opt == 'sgd' and units == 4 and epoch == 3:
        sys.exit(1)
'''
SWEEP_FILE = '''jobNamePrefix: curves
sampling: {{type: random, count: 12, seed: 4}}
parameters:
  - {{name: LEARNING_RATE, type: numeric, dataType: REAL, start: 1e-4, end: 1.0, numValues: 5, scale: LOG}}
  - {{name: UNITS, type: discrete, values: [4, 16, 64]}}
  - {{name: OPT, type: discrete, values: [adam, sgd]}}
job: {job}
'''


def ceiling(params):
    """The final val_accuracy train.py reaches for a parameter set (what the report's best job must have)."""
    import math  # pylint: disable=import-outside-toplevel
    top = (0.95 - 0.08 * (math.log10(params['LEARNING_RATE']) + 1) ** 2 - 0.4 / params['UNITS']
           - (0.03 if params['OPT'] == 'sgd' else 0.0))
    return round(top * (1 - math.exp(-8 / 3)), 4)


@dataclass
class ReportedSweep:
    az: AzRunner
    directory: str
    args: list
    plan_file: str
    report_file: str
    data: dict
    status: dict

    def run(self, command, *args, **kwargs):
        return self.az('batchai', 'sweep', command, *self.args, *args, **kwargs)


def submit_and_wait(local_service, directory, train, sweep_file, prefix, name, parameters):
    """Write train.py and the sweep file (its job: `python3 train.py {{P1}} {{P2}}...`), submit the sweep on the
    local service and wait for its jobs; returns (az runner, the sweep's -g/-w/-e/-n, status -o json)."""
    az = service_az(local_service, directory)
    script = os.path.join(directory, 'train.py')
    with open(script, 'w', encoding='utf-8') as out:
        out.write(train)
    command = 'python3 {} {}'.format(script, ' '.join('{{{{{}}}}}'.format(p) for p in parameters))
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
           'customToolkitSettings': {'commandLine': command}}
    with open(os.path.join(directory, 'sweep.yaml'), 'w', encoding='utf-8') as out:
        out.write(sweep_file.format(job=json.dumps(job)))
    args = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', prefix + uuid.uuid4().hex[:8],
            '-n', name]
    submitted = az('batchai', 'sweep', 'submit', *args, '--spec', 'sweep.yaml', '-c', local_service.cluster)
    assert submitted.exit_code == 0, submitted.stderr
    waited = az('batchai', 'sweep', 'status', *args, '--wait', '--interval', '0.3', '-o', 'json')
    return az, args, waited.json()


@pytest.fixture(scope='session')
def reported_sweep(local_service, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp('report'))
    az, args, status = submit_and_wait(local_service, directory, TRAIN, SWEEP_FILE, 'report-', SWEEP,
                                       ['LEARNING_RATE', 'UNITS', 'OPT'])
    assert status['counts']['failed'] >= 1 and status['counts']['succeeded'] >= 6, status['counts']
    report_file = os.path.join(directory, 'curves.html')
    reported = az('batchai', 'sweep', 'report', *args, '--metric', 'val_accuracy', '--output-file', report_file,
                  '-o', 'json')
    assert reported.exit_code == 0, reported.stderr
    return ReportedSweep(az=az, directory=directory, args=args, plan_file=os.path.join(directory, 'curves.plan.jsonl'),
                         report_file=report_file, data=reported.json(), status=status)
