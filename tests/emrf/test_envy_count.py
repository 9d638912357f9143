"""The env's envy count (the O(N^2) diagnostic without per-pair calls, numpy from ``ENVY_NUMPY_FROM`` users)
equals the public :func:`envy_pairs` (Eq. (2), mu of Eq. (19) in min-form) on every instance, both code paths."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from joulegym.baselines.emrf import envy_pairs
from joulegym.envs.emrf.decisions import EnvyArrays, envy_count

XI = st.one_of(st.sampled_from([0.0, 1.0, 0.07, 0.5]), st.floats(0.0, 1.0))
F = st.one_of(st.sampled_from([0.0, 1e-10, 1.0]), st.floats(0.0, 1e3))


@settings(max_examples=200, deadline=None, database=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.lists(XI, min_size=n, max_size=n),
                                                       st.lists(F, min_size=n, max_size=n))))
def test_envy_count_equals_envy_pairs(instance):
    xi, f = (tuple(v) for v in instance)
    expected = len(envy_pairs(xi, f))
    assert envy_count(xi, f) == expected
    assert EnvyArrays(xi).count(f) == expected
