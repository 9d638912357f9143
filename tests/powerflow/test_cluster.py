"""Placement (PowerFlow §5.3; docs/families/powerflow.md §2.2): buddy packing with migration; first-fit
(Tiresias) and affinity (Gandiva) placement for the non-elastic baselines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulegym.envs.powerflow.cluster import (
    ClusterSpec,
    affinity_place,
    buddy_place,
    first_fit_place,
    placement_shape,
)

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


def test_affinity_prefers_nodes_hosting_the_same_size_then_first_fit():
    """Spec §5.5 Gandiva: a node already hosting a job of the same size first, else the first node with room."""
    prev = {0: (8, 9), 1: (0, 1, 2)}  # a 2-GPU job on node 1, a 3-GPU job on node 0
    placed = affinity_place({0: 2, 1: 3, 2: 2, 3: 3, 4: 4}, prev, G, GPN)
    assert placed[0] == (8, 9) and placed[1] == (0, 1, 2)  # running jobs never move
    assert placed[2] == (10, 11)  # same size as job 0: node 1, although node 0 comes first
    assert placed[3] == (3, 4, 5)  # same size as job 1: node 0
    assert placed[4] == (12, 13, 14, 15)  # nobody of size 4: the first node with room (node 0 has 2 left)
    # Tiresias's consolidated placement puts the 2-GPU job on the fullest node that fits, node 0
    assert first_fit_place({0: 2, 1: 3, 2: 2}, prev, G, GPN)[2] == (3, 4)


def test_affinity_whole_nodes_for_large_jobs_and_spreads_without_moving_anyone():
    prev = {0: (0,), 1: (9,), 2: (17,), 3: (25,)}  # one GPU busy on every node
    placed = affinity_place({0: 1, 1: 1, 2: 1, 3: 1, 4: 8}, prev, G, GPN)
    # no node has 8 free GPUs and nobody is migrated (no cross-job packing): the job is spread first-fit
    assert placed[4] == (1, 2, 3, 4, 5, 6, 7, 8)
    assert placement_shape(placed[4], GPN) == (7, True)
    placed = affinity_place({0: 1, 5: 16}, {0: (3,)}, G, GPN)
    assert placed[5] == tuple(range(8, 24))  # a multi-node job takes the first whole free nodes


@pytest.mark.parametrize("place", [first_fit_place, affinity_place], ids=["first-fit", "affinity"])
@settings(max_examples=60, deadline=None)
@given(sizes_list=st.lists(st.integers(1, 12), min_size=1, max_size=15))
def test_non_migrating_placements_never_move_and_never_overlap(place, sizes_list):
    sizes, total = {}, 0
    for j, n in enumerate(sizes_list):
        if total + n <= G:
            sizes[j] = n
            total += n
    first = place(sizes, {}, G, GPN)
    _check_disjoint(first, sizes)
    keep = {j: n for j, n in sizes.items() if j % 2 == 0}
    second = place(keep, first, G, GPN)
    _check_disjoint(second, keep)
    assert all(second[j] == first[j] for j in keep)
    keep[len(sizes_list)] = 1  # plus a newcomer
    if sum(keep.values()) <= G:
        third = place(keep, first, G, GPN)
        _check_disjoint(third, keep)
        assert all(third[j] == first[j] for j in keep if j in first)
    with pytest.raises(ValueError, match="exceeds"):
        place({0: G, 1: 1}, {}, G, GPN)


def test_cluster_spec_validation():
    assert ClusterSpec(16, 8).num_gpus == 128
    with pytest.raises(ValueError, match="gpus_per_node"):
        ClusterSpec(2, 6)
    with pytest.raises(ValueError, match="nodes"):
        ClusterSpec(0, 8)
