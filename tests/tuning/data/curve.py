"""A tiny deterministic training job for the sweep run tests: prints `epoch=N val_accuracy=V` per epoch.

V = Q * (1 - 0.5 ** epoch): the larger Q, the better at every epoch, so the final ranking is known. With
BATCHAI_SWEEP_PARENT_OUTPUT_MODEL set (a Hyperband promotion) it resumes after the parent's last epoch, read from the
parent's checkpoint; it writes its own checkpoint to $AZ_BATCHAI_OUTPUT_MODEL. SLEEP seconds per epoch; a negative Q
hangs.
"""
import os
import sys
import time

q, epochs, sleep = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
if q < 0:  # a job that hangs (jobTimeoutMinutes must end it)
    time.sleep(600)
start = 0
parent = os.environ.get('BATCHAI_SWEEP_PARENT_OUTPUT_MODEL')
if parent:
    with open(os.path.join(os.path.expandvars(parent), 'checkpoint.txt'), encoding='utf-8') as f:
        start = int(f.read())
    print('resumed from epoch {} of {}'.format(start, os.environ['BATCHAI_SWEEP_PARENT']), flush=True)
out = os.environ.get('AZ_BATCHAI_OUTPUT_MODEL')
for epoch in range(start + 1, epochs + 1):
    time.sleep(sleep)
    print('epoch={} loss={:.4f} val_accuracy={:.6f}'.format(epoch, 1 - q, q * (1 - 0.5 ** epoch)), flush=True)
    if out:
        with open(os.path.join(out, 'checkpoint.txt'), 'w', encoding='utf-8') as f:
            f.write(str(epoch))
