"""A tiny deterministic job for the multi-objective `sweep run` tests: per epoch, accuracy (max), latency (min) and
memory (a constraint) of a model of size Q run K times slower: `epoch=N val_accuracy=Q*E latency_ms=100*Q*K
memory_gb=10*Q`, E = 1 - 0.5 ** epoch. Larger Q is more accurate and slower; K = 2 is dominated by K = 1."""
import sys
import time

q, k, epochs, sleep = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
for epoch in range(1, epochs + 1):
    time.sleep(sleep)
    print('epoch={} val_accuracy={:.6f} latency_ms={:.3f} memory_gb={:.3f}'.format(
        epoch, q * (1 - 0.5 ** epoch), 100 * q * k, 10 * q), flush=True)
