"""Cluster topology and job placement of the PowerFlow family (Gu et al. §4.1, §5.3; docs/families/powerflow.md §2).

The cluster is ``nodes x gpn`` homogeneous GPUs indexed ``0 .. G-1`` with ``node = index // gpn``.
A GPU is dedicated to one job (no sharing, §2.2). Nodes without an allocated GPU are shut down
(0 W); free GPUs on powered nodes draw ``P_idle`` (§3.1, docs §2.1).

Three placements:

- :func:`buddy_place` — network packing (AFS) + buddy allocation with migration (HiveD), PowerFlow's
  §5.3: power-of-two jobs get size-aligned contiguous blocks, so a job with ``n <= gpn`` sits inside one
  node and a job with ``n >= gpn`` owns whole nodes (``r = min(n, gpn)``). Jobs are placed in descending
  size (descending power-of-two sizes always fit); each keeps its previous block when it is still free,
  else takes a best-fit free aligned block that is nobody's previous block; then partly used nodes are
  emptied by migration while that powers fewer nodes, so at most one node stays partly used (without
  pinned jobs; measured on 3,000 random cases). Moved jobs count as migrated and pay the reconfiguration
  overhead. The first version kept every previous block (first-fit, no compaction): on the Alibaba-scale
  trace at eta = 0.4 it left 6.1 partly used nodes on average; sticky placement alone gives 18.1 kWh of
  idle energy there, with the compaction 3.9 kWh (total 403 vs 415 kWh, for 44 % more migrations and +0.13 h
  average JCT at that throttled budget; ``placement="packed-sticky"`` in the simulator keeps the former).
- :func:`first_fit_place` — Tiresias's (and FIFO's) non-migrating "consolidated placement if possible, else
  spread" (docs §2.2): a job that keeps its size keeps its GPUs; a new job goes to the powered node with the
  fewest free GPUs that fits it (consolidated), else is spread over nodes (most free first). Jobs of any
  size; fragmentation (idle GPUs on powered nodes, multi-node jobs) can happen, as the paper argues.
- :func:`affinity_place` — Gandiva's affinity placement (docs §2.2, after Gandiva [65] §4): non-migrating;
  a new job goes to the first node already hosting a job of the same size that has room, else to the first
  node with room (first-fit), else (or for a job larger than a node: first to whole free nodes) over the
  lowest-numbered free GPUs. No cross-job packing: nobody is moved to make room, so fragmentation happens.
- :func:`affinity_migrate_place` — the same plus Gandiva's migration: a job left spread over nodes moves to one
  node as soon as one has room for it (Gandiva's default, ``placement="affinity-migrate"``).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClusterSpec:
    """``nodes`` x ``gpus_per_node`` GPUs of one device type."""

    nodes: int = 16  # docs §2.1: 16 x 8 V100 (ElasticFlow's n16g8)
    gpus_per_node: int = 8
    device: str = "v100"

    def __post_init__(self) -> None:
        if int(self.nodes) < 1:
            raise ValueError(f"cluster nodes must be >= 1, got {self.nodes}")
        if int(self.gpus_per_node) < 1 or (int(self.gpus_per_node) & (int(self.gpus_per_node) - 1)):
            raise ValueError(f"cluster gpus_per_node must be a power of two >= 1, got {self.gpus_per_node}")

    @property
    def num_gpus(self) -> int:
        return int(self.nodes) * int(self.gpus_per_node)


def is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


# Clusters up to this many GPUs run :func:`buddy_place` on a Python int bitmask (:func:`_buddy_place_bits`), larger
# ones on numpy bool arrays; both give the same placement (tests/powerflow/test_cluster.py fuzzes them against each
# other). numpy's per-call cost dominates on small arrays, the per-block Python loops on large ones: the crossover
# lies between 64 and 128 GPUs (docs/families/powerflow.md §12, "Cost of a step").
SMALL_CLUSTER_GPUS = 64


def buddy_place(sizes: dict[int, int], previous: dict[int, tuple[int, ...]], num_gpus: int,
                pinned: frozenset[int] = frozenset(), compact: bool = True,
                gpn: int | None = None) -> dict[int, tuple[int, ...]]:
    """Aligned power-of-two blocks for ``sizes`` (job -> n); ``previous`` job -> GPUs held before.

    Buddy allocation (HiveD [67]) with migration (paper §5.3, docs §2.2), in two passes:

    1. *Sticky pass.* Pinned jobs keep their GPUs. The others, in descending size (ties: jobs with a
       previous block first), keep their previous block when it is still free; otherwise they take a free
       aligned block that overlaps nobody's previous block, chosen best-fit (the block whose largest free
       enclosing aligned block is smallest, so partly used cells fill before empty ones are split).
    2. *Compaction* (``compact`` and ``gpn`` given): while more nodes are powered than
       ``ceil(allocated / gpn)``, the least-used partly filled node without pinned jobs is emptied by moving
       its jobs best-fit into the other powered nodes — a migration only when it frees a node (0 W).

    A job that finds no aligned block (only possible around pinned jobs, which are never moved) is halved
    until one fits (possibly to nothing): the returned tuple is then shorter than ``sizes[j]``.

    :raises ValueError: if a size is not a power of two or the sizes exceed ``num_gpus``.
    """
    total = sum(sizes.values())
    if total > num_gpus:
        raise ValueError(f"allocation of {total} GPUs exceeds the cluster's {num_gpus}")
    for j, n in sizes.items():
        if not is_pow2(n):
            raise ValueError(f"job {j}: packed placement needs a power-of-two size, got {n}")
    if num_gpus <= SMALL_CLUSTER_GPUS:
        return _buddy_place_bits(sizes, previous, num_gpus, pinned, compact, gpn)
    free = np.ones(num_gpus, dtype=bool)
    out: dict[int, tuple[int, ...]] = {}
    fixed = sorted(set(pinned) & set(sizes))
    for j in fixed:
        p = previous.get(j, ())
        if len(p) != sizes[j] or not free[list(p)].all():
            raise ValueError(f"pinned job {j} must keep its {sizes[j]} GPUs, had {p}")
        free[list(p)] = False
        out[j] = p

    def prev_start(j: int) -> int:
        p = previous.get(j)
        return p[0] if p else num_gpus

    order = sorted((j for j in sizes if j not in out), key=lambda j: (-sizes[j], prev_start(j), j))
    reserved = np.zeros(num_gpus, dtype=np.int32)  # previous blocks of jobs not yet placed: avoid taking them
    for j in order:
        p = previous.get(j)
        if p:
            reserved[_span(p)] += 1
    for j in order:
        n = sizes[j]
        p = previous.get(j)
        if p:
            reserved[_span(p)] -= 1
        if p and len(p) == n and p[0] % n == 0 and p[-1] - p[0] == n - 1 and free[p[0]:p[0] + n].all():
            free[p[0]:p[0] + n] = False
            out[j] = p
            continue
        hit = np.zeros(0, dtype=np.int64)
        while n >= 1:
            hit = np.flatnonzero(free[: num_gpus - num_gpus % n].reshape(-1, n).all(axis=1))
            if hit.size:
                break
            n //= 2
        if n == 0:
            out[j] = ()
            continue
        untaken = free & (reserved == 0)
        clean = hit[untaken[: num_gpus - num_gpus % n].reshape(-1, n).all(axis=1)[hit]]
        cand = _best_fit(untaken, clean, n, num_gpus) if clean.size else hit
        start = int(cand[0]) * n
        free[start:start + n] = False
        out[j] = tuple(range(start, start + n))
    if compact and gpn:
        _compact(out, free, num_gpus, gpn, frozenset(fixed))
    return out


def _buddy_place_bits(sizes: dict[int, int], previous: dict[int, tuple[int, ...]], num_gpus: int,
                      pinned: frozenset[int], compact: bool, gpn: int | None) -> dict[int, tuple[int, ...]]:
    """:func:`buddy_place` (validated arguments) on an int bitmask: bit ``g`` of ``free`` is set while GPU ``g`` is
    free. The same passes, orders and tie-breaks as the numpy version, step for step."""
    free = (1 << num_gpus) - 1
    out: dict[int, tuple[int, ...]] = {}
    fixed = sorted(set(pinned) & set(sizes))
    for j in fixed:
        p = previous.get(j, ())
        held = _bits_of(p)
        if len(p) != sizes[j] or free & held != held:
            raise ValueError(f"pinned job {j} must keep its {sizes[j]} GPUs, had {p}")
        free &= ~held
        out[j] = p

    def prev_start(j: int) -> int:
        p = previous.get(j)
        return p[0] if p else num_gpus

    order = sorted((j for j in sizes if j not in out), key=lambda j: (-sizes[j], prev_start(j), j))
    reserved = [0] * num_gpus  # previous blocks of jobs not yet placed: avoid taking them
    reserved_bits = 0
    for j in order:
        p = previous.get(j)
        if p:
            for g in _span_list(p):
                reserved[g] += 1
            reserved_bits |= _bits_of(p)
    for j in order:
        n = sizes[j]
        p = previous.get(j)
        if p:
            for g in _span_list(p):
                reserved[g] -= 1
                if not reserved[g]:
                    reserved_bits &= ~(1 << g)
        if p and len(p) == n and p[0] % n == 0 and p[-1] - p[0] == n - 1:
            block = ((1 << n) - 1) << p[0]
            if free & block == block:
                free &= ~block
                out[j] = p
                continue
        hit: tuple[int, ...] = ()
        while n >= 1:
            hit = _free_blocks(free, n, num_gpus)
            if hit:
                break
            n //= 2
        if n == 0:
            out[j] = ()
            continue
        untaken = free & ~reserved_bits
        full = (1 << n) - 1
        clean = tuple([b for b in hit if (untaken >> (b * n)) & full == full])
        cand = _best_fit_bits(untaken, clean, n, num_gpus) if clean else hit
        start = cand[0] * n
        free &= ~(full << start)
        out[j] = tuple(range(start, start + n))
    if compact and gpn:
        _compact_bits(out, free, num_gpus, gpn, frozenset(fixed))
    return out


def _bits_of(gpus: tuple[int, ...]) -> int:
    mask = 0
    for g in gpus:
        mask |= 1 << g
    return mask


def _span_list(gpus: tuple[int, ...]):
    """The GPUs :func:`_span` indexes (a duplicate counts once, as in a numpy fancy-index increment)."""
    return range(gpus[0], gpus[-1] + 1) if gpus[-1] - gpus[0] == len(gpus) - 1 else sorted(set(gpus))


# The two helpers below are pure functions of ints, called with the same few masks over and over (a decision point
# re-places every job): memoised, a repeat costs a dictionary look-up instead of a loop over the blocks.
@functools.lru_cache(maxsize=1 << 14)
def _free_blocks(free: int, n: int, num_gpus: int) -> tuple[int, ...]:
    """Indices ``b`` of the wholly free aligned ``n``-blocks ``[b n, (b + 1) n)``."""
    full = (1 << n) - 1
    return tuple([b for b in range(num_gpus // n) if (free >> (b * n)) & full == full])


@functools.lru_cache(maxsize=1 << 14)
def _best_fit_bits(free: int, hit: tuple[int, ...], n: int, num_gpus: int) -> tuple[int, ...]:
    """:func:`_best_fit` on a bitmask."""
    enc = [n] * len(hit)
    m = 2 * n
    while m <= num_gpus:
        blocks, full = num_gpus // m, (1 << m) - 1
        sel = [i for i, h in enumerate(hit) if (idx := h * n // m) < blocks and (free >> (idx * m)) & full == full]
        if not sel:
            break
        for i in sel:
            enc[i] = m
        m *= 2
    least = min(enc)
    return tuple([h for h, e in zip(hit, enc) if e == least])


def _node_use(free: int, nodes: int, gpn: int) -> list[int]:
    """Allocated GPUs per node (of the first ``nodes * gpn`` GPUs)."""
    used = ~free & ((1 << (nodes * gpn)) - 1)
    full = (1 << gpn) - 1
    return [((used >> (k * gpn)) & full).bit_count() for k in range(nodes)]


def _compact_bits(out: dict[int, tuple[int, ...]], free: int, num_gpus: int, gpn: int,
                  pinned: frozenset[int]) -> None:
    """:func:`_compact` on a bitmask."""
    nodes = num_gpus // gpn
    if nodes < 2:
        return
    node_mask = (1 << gpn) - 1
    while True:
        used = _node_use(free, nodes, gpn)
        powered = [u > 0 for u in used]
        if sum(powered) <= -(-sum(used) // gpn):
            return
        node_of = {j: g[0] // gpn for j, g in out.items() if g}
        blocked = {node_of[j] for j in pinned if j in node_of}
        partial = [k for k in range(nodes) if 0 < used[k] < gpn and k not in blocked]
        moved = False
        for k in sorted(partial, key=lambda k: (used[k], -k)):
            movers = sorted((j for j, nd in node_of.items() if nd == k), key=lambda j: (-len(out[j]), j))
            trial = free
            for j in movers:
                trial |= _bits_of(out[j])
            target = trial & ~(node_mask << (k * gpn))  # where movers may go: the *other* powered nodes
            for node in range(nodes):
                if not powered[node]:
                    target &= ~(node_mask << (node * gpn))
            plan = {}
            for j in movers:
                n = len(out[j])
                hit = _free_blocks(target, n, num_gpus)
                if not hit:
                    break
                start = _best_fit_bits(target, hit, n, num_gpus)[0] * n
                block = ((1 << n) - 1) << start
                target &= ~block
                trial &= ~block
                plan[j] = tuple(range(start, start + n))
            if len(plan) == len(movers):
                out.update(plan)
                free = trial
                moved = True
                break
        if not moved:
            _repack_bits(out, free, num_gpus, gpn, pinned)
            return


def _repack_bits(out: dict[int, tuple[int, ...]], free: int, num_gpus: int, gpn: int,
                 pinned: frozenset[int]) -> None:
    """:func:`_repack` on a bitmask."""
    nodes = num_gpus // gpn
    trial = free
    movers = sorted((j for j, g in out.items() if g and j not in pinned), key=lambda j: (-len(out[j]), j))
    for j in movers:
        trial |= _bits_of(out[j])
    plan = {}
    for j in movers:
        n = len(out[j])
        hit = _free_blocks(trial, n, num_gpus)
        if not hit:
            return
        start = hit[0] * n
        trial &= ~(((1 << n) - 1) << start)
        plan[j] = tuple(range(start, start + n))
    if sum(u > 0 for u in _node_use(trial, nodes, gpn)) < sum(u > 0 for u in _node_use(free, nodes, gpn)):
        out.update(plan)


def _span(gpus: tuple[int, ...]):
    """Index of a GPU set: a slice when contiguous (always, under packing), else the list."""
    return slice(gpus[0], gpus[-1] + 1) if gpus[-1] - gpus[0] == len(gpus) - 1 else list(gpus)


def _compact(out: dict[int, tuple[int, ...]], free: np.ndarray, num_gpus: int, gpn: int,
             pinned: frozenset[int]) -> None:
    """Empty partly used nodes into the other powered nodes while that lowers the powered-node count."""
    nodes = num_gpus // gpn
    if nodes < 2:
        return
    while True:
        used = (~free[: nodes * gpn]).reshape(nodes, gpn).sum(axis=1)
        powered = used > 0
        if int(powered.sum()) <= -(-int(used.sum()) // gpn):
            return
        node_of = {j: g[0] // gpn for j, g in out.items() if g}
        blocked = {node_of[j] for j in pinned if j in node_of}
        partial = [k for k in np.flatnonzero((used > 0) & (used < gpn)).tolist() if k not in blocked]
        moved = False
        for k in sorted(partial, key=lambda k: (used[k], -k)):
            movers = sorted((j for j, nd in node_of.items() if nd == k), key=lambda j: (-len(out[j]), j))
            trial = free.copy()
            for j in movers:
                trial[list(out[j])] = True
            target = trial.copy()  # where movers may go: free GPUs of the *other* powered nodes
            target[k * gpn:(k + 1) * gpn] = False
            target[: nodes * gpn].reshape(nodes, gpn)[~powered] = False
            plan = {}
            for j in movers:
                n = len(out[j])
                hit = np.flatnonzero(target[: num_gpus - num_gpus % n].reshape(-1, n).all(axis=1))
                if not hit.size:
                    break
                start = int(_best_fit(target, hit, n, num_gpus)[0]) * n
                target[start:start + n] = False
                trial[start:start + n] = False
                plan[j] = tuple(range(start, start + n))
            if len(plan) == len(movers):
                out.update(plan)
                free[:] = trial
                moved = True
                break
        if not moved:
            _repack(out, free, num_gpus, gpn, pinned)
            return


def _repack(out: dict[int, tuple[int, ...]], free: np.ndarray, num_gpus: int, gpn: int,
            pinned: frozenset[int]) -> None:
    """Last resort when emptying one node at a time cannot reach the fewest nodes (e.g. 4+1 GPUs on each of
    three nodes): re-place every unpinned job, largest first, on the lowest free aligned block. Descending
    power-of-two sizes on aligned blocks leave no gap, so this reaches ``ceil(allocated / gpn)`` nodes when
    pinned jobs allow; it is adopted only if it powers fewer nodes (every moved job is a migration)."""
    nodes = num_gpus // gpn
    trial = free.copy()
    movers = sorted((j for j, g in out.items() if g and j not in pinned), key=lambda j: (-len(out[j]), j))
    for j in movers:
        trial[list(out[j])] = True
    plan = {}
    for j in movers:
        n = len(out[j])
        hit = np.flatnonzero(trial[: num_gpus - num_gpus % n].reshape(-1, n).all(axis=1))
        if not hit.size:
            return
        start = int(hit[0]) * n
        trial[start:start + n] = False
        plan[j] = tuple(range(start, start + n))

    def powered(mask: np.ndarray) -> int:
        return int(((~mask[: nodes * gpn]).reshape(nodes, gpn).sum(axis=1) > 0).sum())

    if powered(trial) < powered(free):
        out.update(plan)
        free[:] = trial


def _best_fit(free: np.ndarray, hit: np.ndarray, n: int, num_gpus: int) -> np.ndarray:
    """The candidate ``n``-blocks (indices ``hit``) whose largest free enclosing aligned block is smallest."""
    enc = np.full(hit.size, n, dtype=np.int64)
    m = 2 * n
    while m <= num_gpus:
        fm = free[: num_gpus - num_gpus % m].reshape(-1, m).all(axis=1)
        idx = hit * n // m
        sel = np.zeros(hit.size, dtype=bool)
        ok = idx < fm.size
        sel[ok] = fm[idx[ok]]
        if not sel.any():  # a block is free only if its halves are: no larger level can be free either
            break
        enc[sel] = m
        m *= 2
    return hit[enc == enc.min()]


def _keep_running(sizes: dict[int, int], previous: dict[int, tuple[int, ...]],
                  num_gpus: int) -> tuple[np.ndarray, dict[int, tuple[int, ...]]]:
    """Start of a non-migrating placement: ``(free mask, placed)`` with every job that keeps its size on its GPUs.

    :raises ValueError: if the sizes exceed ``num_gpus``.
    """
    total = sum(sizes.values())
    if total > num_gpus:
        raise ValueError(f"allocation of {total} GPUs exceeds the cluster's {num_gpus}")
    free = np.ones(num_gpus, dtype=bool)
    out = {j: p if p.__class__ is tuple else tuple(p) for j, n in sizes.items()
           if (p := previous.get(j)) and len(p) == n}
    if out:  # one scatter for every kept GPU (hundreds of running jobs per decision on the Philly traces)
        free[np.fromiter(itertools.chain.from_iterable(out.values()), dtype=np.int64)] = False
    return free, out


def _whole_free_nodes(per_node: np.ndarray, n: int, gpn: int) -> list[int]:
    """GPUs of the first ``n // gpn`` wholly free nodes (a job larger than a node)."""
    gpus: list[int] = []
    for k in np.flatnonzero(per_node == gpn)[: n // gpn].tolist():
        gpus.extend(range(k * gpn, (k + 1) * gpn))
    return gpus


def first_fit_place(sizes: dict[int, int], previous: dict[int, tuple[int, ...]], num_gpus: int,
                    gpn: int) -> dict[int, tuple[int, ...]]:
    """Non-migrating consolidated-else-spread placement (see module docstring)."""
    free, out = _keep_running(sizes, previous, num_gpus)
    nodes = num_gpus // gpn
    for j in sorted((j for j in sizes if j not in out), key=lambda j: (-sizes[j], j)):
        n = sizes[j]
        per_node = free.reshape(nodes, gpn).sum(axis=1)
        powered = per_node < gpn
        gpus: list[int] = []
        if n <= gpn:
            fits = np.flatnonzero(per_node >= n)
            if fits.size:
                # prefer powered nodes, then the tightest fit, then the lowest index
                best = min(fits.tolist(), key=lambda k: (not powered[k], per_node[k], k))
                idx = np.flatnonzero(free[best * gpn:(best + 1) * gpn])[:n] + best * gpn
                gpus = idx.tolist()
        else:
            gpus = _whole_free_nodes(per_node, n, gpn)
        if len(gpus) < n:  # spread: nodes with most free GPUs first
            taken = set(gpus)
            for k in sorted(range(nodes), key=lambda k: (-per_node[k], k)):
                for g in np.flatnonzero(free[k * gpn:(k + 1) * gpn]) + k * gpn:
                    if len(gpus) == n:
                        break
                    if int(g) not in taken:
                        gpus.append(int(g))
                if len(gpus) == n:
                    break
        gpus.sort()
        out[j] = tuple(gpus)
        free[gpus] = False
    return out


def affinity_place(sizes: dict[int, int], previous: dict[int, tuple[int, ...]], num_gpus: int,
                   gpn: int) -> dict[int, tuple[int, ...]]:
    """Gandiva's non-migrating affinity placement (see module docstring); jobs of any size.

    Jobs that keep their size keep their GPUs; new (or resized) jobs are placed in ``sizes`` order (the
    scheduler's admission order, FIFO for Gandiva). A node's affinity is the set of sizes of the jobs it hosts.

    :raises ValueError: if the sizes exceed ``num_gpus``.
    """
    free, out = _keep_running(sizes, previous, num_gpus)
    nodes = num_gpus // gpn
    hosts: list[set[int]] = [set() for _ in range(nodes)]  # sizes of the jobs on each node
    for gpus in out.values():
        for k in {g // gpn for g in gpus}:
            hosts[k].add(len(gpus))
    for j, n in sizes.items():
        if j in out:
            continue
        per_node = free.reshape(nodes, gpn).sum(axis=1)
        gpus: list[int] = []
        if n <= gpn:
            fits = np.flatnonzero(per_node >= n).tolist()
            pick = [k for k in fits if n in hosts[k]] or fits
            if pick:
                k = pick[0]
                gpus = (np.flatnonzero(free[k * gpn:(k + 1) * gpn])[:n] + k * gpn).tolist()
        else:
            gpus = _whole_free_nodes(per_node, n, gpn)
        if len(gpus) < n:  # spread: the lowest-numbered free GPUs
            taken = set(gpus)
            gpus += [g for g in np.flatnonzero(free).tolist() if g not in taken][: n - len(gpus)]
        gpus.sort()
        out[j] = tuple(gpus)
        free[gpus] = False
        for k in {g // gpn for g in gpus}:
            hosts[k].add(n)
    return out


def affinity_migrate_place(sizes: dict[int, int], previous: dict[int, tuple[int, ...]], num_gpus: int, gpn: int,
                           pinned: frozenset[int] = frozenset()) -> dict[int, tuple[int, ...]]:
    """Gandiva's affinity placement plus its migration (Gandiva [65] §3.3/§4.2: jobs are migrated to de-fragment
    the cluster and to restore locality): :func:`affinity_place`, then every job spread over more nodes than it
    needs (``ceil(n / gpn)``) and not pinned moves, largest first, to a node with room for all of it (its own
    GPUs there count as free; the node where it already holds most GPUs first, then the tightest fit). A move
    costs the simulator's reconfiguration overhead (a migration, counted in ``migrations``)."""
    out = affinity_place(sizes, previous, num_gpus, gpn)
    nodes = num_gpus // gpn
    free = np.ones(num_gpus, dtype=bool)
    for gpus in out.values():
        free[list(gpus)] = False
    spread = [j for j, g in out.items() if g and j not in pinned and len(g) <= gpn
              and g[0] // gpn != g[-1] // gpn]
    for j in sorted(spread, key=lambda j: (-len(out[j]), j)):
        gpus = out[j]
        n = len(gpus)
        trial = free.copy()
        trial[list(gpus)] = True
        per_node = trial.reshape(nodes, gpn).sum(axis=1)
        fits = np.flatnonzero(per_node >= n).tolist()
        if not fits:
            continue
        held = np.bincount([g // gpn for g in gpus], minlength=nodes)
        k = min(fits, key=lambda k: (-held[k], per_node[k], k))
        own = [g for g in gpus if g // gpn == k]
        extra = [int(g) for g in np.flatnonzero(free[k * gpn:(k + 1) * gpn]) + k * gpn][: n - len(own)]
        new = tuple(sorted(own + extra))
        free[list(gpus)] = True
        free[list(new)] = False
        out[j] = new
    return out


def placement_shape(gpus: tuple[int, ...], gpn: int) -> tuple[int, bool]:
    """``(r, multi_node)`` of a GPU set: the most GPUs on one node, and whether it spans nodes."""
    if not gpus:
        return 0, False
    if gpus[0] // gpn == gpus[-1] // gpn:  # sorted: one node
        return len(gpus), False
    nodes = [g // gpn for g in gpus]
    counts = np.bincount(nodes)
    return int(counts.max()), int(np.count_nonzero(counts)) > 1
