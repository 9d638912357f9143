"""Placement (PowerFlow §5.3; spec §5.3): buddy packing with migration, first-fit for the baselines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulegym.envs.powerflow.cluster import ClusterSpec, buddy_place, first_fit_place, placement_shape

GPN = 8
G = 32


def _check_disjoint(placed, sizes, num_gpus: int = G):
    seen = set()
    for j, gpus in placed.items():
        assert len(gpus) == sizes[j]
        assert not seen & set(gpus)
        assert all(0 <= g < num_gpus for g in gpus)
        seen |= set(gpus)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=1, max_size=20), st.randoms(use_true_random=False))
def test_buddy_blocks_are_aligned_and_packed(sizes_list, rnd):
    sizes = {}
    total = 0
    for j, n in enumerate(sizes_list):
        if total + n <= G:
            sizes[j] = n
            total += n
    # a random previous placement (a valid earlier packing of a subset) to exercise the sticky pass
    prev_sizes = {j: n for j, n in sizes.items() if rnd.random() < 0.5}
    previous = buddy_place(prev_sizes, {}, G) if prev_sizes else {}
    placed = buddy_place(sizes, previous, G)
    _check_disjoint(placed, sizes)
    for j, gpus in placed.items():
        n = sizes[j]
        assert gpus[0] % n == 0 and gpus == tuple(range(gpus[0], gpus[0] + n))
        r, multi = placement_shape(gpus, GPN)
        assert r == min(n, GPN) and multi == (n > GPN)
    # without history, descending power-of-two packing leaves at most one partially used node
    fresh = buddy_place(sizes, {}, G)
    used = [sum(1 for gpus in fresh.values() for g in gpus if g // GPN == k) for k in range(G // GPN)]
    assert sum(1 for u in used if 0 < u < GPN) <= 1


def test_buddy_keeps_previous_blocks_when_free():
    prev = {0: (8, 9, 10, 11), 1: (0,)}
    placed = buddy_place({0: 4, 1: 1, 2: 2}, prev, G)  # no gpn: no compaction pass
    assert placed[0] == prev[0] and placed[1] == prev[1]
    # with compaction the lone 1-GPU job joins the 4-GPU job's node (one migration frees node 0)
    placed = buddy_place({0: 4, 1: 1, 2: 2}, prev, G, gpn=GPN)
    assert placed[0] == prev[0] and placed[1][0] // GPN == 1 and placed[2][0] // GPN == 1


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([1, 1, 1, 2, 2, 4, 8, 16]), min_size=1, max_size=20), st.randoms(use_true_random=False))
def test_buddy_with_migration_powers_the_fewest_nodes(sizes_list, rnd):
    """§5.3 "buddy allocation combined with job migration to eliminate resource fragmentation": from any
    scattered previous placement, at most one node stays partly used (the fewest nodes are powered)."""
    sizes, total = {}, 0
    for j, n in enumerate(sizes_list):
        if total + n <= G:
            sizes[j] = n
            total += n
    taken, previous = set(), {}
    for j, n in sorted(sizes.items(), key=lambda kv: -kv[1]):  # a random aligned earlier placement
        starts = [s for s in range(0, G, n) if not taken & set(range(s, s + n))]
        if starts and rnd.random() < 0.7:
            s = rnd.choice(starts)
            taken |= set(range(s, s + n))
            previous[j] = tuple(range(s, s + n))
    placed = buddy_place(sizes, previous, G, gpn=GPN)
    _check_disjoint(placed, sizes)
    powered = {g // GPN for gpus in placed.values() for g in gpus}
    assert len(powered) == -(-total // GPN)
    sticky = buddy_place(sizes, previous, G, compact=False, gpn=GPN)  # the migration-free pass alone
    assert len(powered) <= len({g // GPN for gpus in sticky.values() for g in gpus})


def test_buddy_never_moves_pinned_jobs_and_halves_what_cannot_fit():
    prev = {0: (0,), 1: (8,), 2: (4, 5, 6, 7)}
    placed = buddy_place({0: 1, 1: 1, 2: 4, 3: 8}, prev, 16, pinned=frozenset({0, 1}), gpn=GPN)
    assert placed[0] == (0,) and placed[1] == (8,)  # pinned (profiling/restarting) jobs stay put
    assert len(placed[3]) == 4  # no free aligned 8-block around the pinned GPUs: the job is halved
    _check_disjoint(placed, {0: 1, 1: 1, 2: 4, 3: 4}, 16)
    with pytest.raises(ValueError, match="pinned job 0 must keep"):
        buddy_place({0: 2}, {0: (0,)}, 16, pinned=frozenset({0}))


def test_buddy_rejects_bad_sizes():
    with pytest.raises(ValueError, match="power-of-two"):
        buddy_place({0: 3}, {}, G)
    with pytest.raises(ValueError, match="exceeds"):
        buddy_place({0: 32, 1: 1}, {}, G)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=15))
def test_first_fit_never_moves_and_never_overlaps(sizes_list):
    sizes, total = {}, 0
    for j, n in enumerate(sizes_list):
        if total + n <= G:
            sizes[j] = n
            total += n
    first = first_fit_place(sizes, {}, G, GPN)
    _check_disjoint(first, sizes)
    keep = {j: n for j, n in sizes.items() if j % 2 == 0}
    second = first_fit_place(keep, first, G, GPN)
    assert all(second[j] == first[j] for j in keep)


def test_cluster_spec_validation():
    assert ClusterSpec(16, 8).num_gpus == 128
    with pytest.raises(ValueError, match="gpus_per_node"):
        ClusterSpec(2, 6)
    with pytest.raises(ValueError, match="nodes"):
        ClusterSpec(0, 8)
