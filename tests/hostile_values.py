"""What a hostile job prints, as hypothesis strategies: any finite float, the float limits drawn often, and steps in
any order (shared by the generated tests of tests/tuning and tests/report)."""
from hypothesis import strategies as st

EDGES = [1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -5e-324, 0.0, -0.0, 1e300,
         -1e300, 2.2250738585072014e-308, 1.0, 1.0000000000000002, 99.0]
values = st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=False, allow_infinity=False),
                   st.floats(-10, 10, allow_nan=False))
steps = st.one_of(st.integers(-2, 12).map(float), st.sampled_from([1e308, -1e308, 5e-324, 0.5]),
                  st.floats(allow_nan=False, allow_infinity=False))
