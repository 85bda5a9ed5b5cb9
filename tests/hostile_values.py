"""What a hostile job prints, as hypothesis strategies: any finite float, the float limits drawn often, and steps in
any order (shared by the generated tests of tests/tuning and tests/report)."""
import os

from hypothesis import HealthCheck, settings, strategies as st

# `make mutate` (scripts/mutate.py) sets HYPOTHESIS_PROFILE=mutate: each generated test then tries MUTATE_EXAMPLES
# sequences, the same ones every run (derandomize), with no deadline (mutmut's tracing slows every call); a mutant
# runs every test that called the mutated code, so 150 examples made a surviving policy mutant cost 10 s and more.
# `make test` never sets it: there each test tries the examples its file asks for.
MUTATE_EXAMPLES = 25


def bounded(max_examples, deadline):
    """A generated test's settings: `max_examples` sequences within `deadline` ms each, derandomized, hypothesis'
    database off (no .hypothesis folder in the tree); fewer and no deadline under make mutate's profile."""
    if os.environ.get('HYPOTHESIS_PROFILE') == 'mutate':
        max_examples, deadline = min(max_examples, MUTATE_EXAMPLES), None
    return settings(max_examples=max_examples, deadline=deadline, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


EDGES = [1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -5e-324, 0.0, -0.0, 1e300,
         -1e300, 2.2250738585072014e-308, 1.0, 1.0000000000000002, 99.0]
values = st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=False, allow_infinity=False),
                   st.floats(-10, 10, allow_nan=False))
steps = st.one_of(st.integers(-2, 12).map(float), st.sampled_from([1e308, -1e308, 5e-324, 0.5]),
                  st.floats(allow_nan=False, allow_infinity=False))
