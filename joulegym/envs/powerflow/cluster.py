"""Cluster topology and job placement of the PowerFlow family (Gu et al. §4.1, §5.3; spec §5.3).

The cluster is ``nodes x gpn`` homogeneous GPUs indexed ``0 .. G-1`` with ``node = index // gpn``.
A GPU is dedicated to one job (no sharing, §2.2). Nodes without an allocated GPU are shut down
(0 W); free GPUs on powered nodes draw ``P_idle`` (§3.1, spec §5.3).

Two placements:

- :func:`buddy_place` — network packing (AFS) + buddy allocation with migration (HiveD), PowerFlow's
  §5.3: power-of-two jobs get size-aligned contiguous blocks, so a job with ``n <= gpn`` sits inside one
  node and a job with ``n >= gpn`` owns whole nodes (``r = min(n, gpn)``). Jobs are placed in descending
  size; each keeps its previous block when it is still free, else takes the lowest free aligned block
  that is nobody's previous block (fewest migrations); descending power-of-two sizes always fit. Moved
  jobs count as migrated and pay the reconfiguration overhead.
- :func:`first_fit_place` — the non-migrating placement of the non-elastic baselines (Gandiva/Tiresias,
  spec §5.5): a job that keeps its size keeps its GPUs; a new job goes to the powered node with the
  fewest free GPUs that fits it (consolidated), else is spread over nodes (most free first). Jobs of any
  size; fragmentation (idle GPUs on powered nodes, multi-node jobs) can happen, as the paper argues.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClusterSpec:
    """``nodes`` x ``gpus_per_node`` GPUs of one device type."""

    nodes: int = 16  # spec §2.1 [A]: 16 x 8 V100 (ElasticFlow's n16g8)
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


def buddy_place(sizes: dict[int, int], previous: dict[int, tuple[int, ...]], num_gpus: int,
                pinned: frozenset[int] = frozenset()) -> dict[int, tuple[int, ...]]:
    """Aligned power-of-two blocks for ``sizes`` (job -> n); ``previous`` job -> GPUs held before.

    :raises ValueError: if a size is not a power of two or the sizes exceed ``num_gpus``.
    """
    total = sum(sizes.values())
    if total > num_gpus:
        raise ValueError(f"allocation of {total} GPUs exceeds the cluster's {num_gpus}")
    for j, n in sizes.items():
        if not is_pow2(n):
            raise ValueError(f"job {j}: packed placement needs a power-of-two size, got {n}")
    free = np.ones(num_gpus, dtype=bool)
    out: dict[int, tuple[int, ...]] = {}

    def prev_start(j: int) -> int:
        p = previous.get(j)
        return p[0] if p else num_gpus

    # One pass, pinned jobs first, then descending size: every block placed before a job of size n is
    # aligned to a multiple of n, so free space is a union of n-aligned blocks and a block always exists
    # (only pinned small jobs placed first can break this; then everything is repacked).
    order = sorted(sizes, key=lambda j: (j not in pinned, -sizes[j], prev_start(j), j))
    reserved = np.zeros(num_gpus, dtype=bool)  # previous blocks of jobs not yet placed: avoid taking them
    for j in order:
        p = previous.get(j)
        if p:
            reserved[list(p)] = True
    for j in order:
        n = sizes[j]
        p = previous.get(j)
        if p:
            reserved[list(p)] = False
        if p and len(p) == n and p[0] % n == 0 and p[-1] - p[0] == n - 1 and free[p[0]:p[0] + n].all():
            free[p[0]:p[0] + n] = False
            out[j] = p
            continue
        usable = num_gpus - num_gpus % n
        blocks = free[:usable].reshape(-1, n).all(axis=1)
        hit = np.flatnonzero(blocks)
        if hit.size == 0:
            return _repack(sizes, order, num_gpus)
        clean = hit[~reserved[:usable].reshape(-1, n).any(axis=1)[hit]]
        start = int(clean[0] if clean.size else hit[0]) * n
        free[start:start + n] = False
        out[j] = tuple(range(start, start + n))
    return out


def _repack(sizes: dict[int, int], order: list[int], num_gpus: int) -> dict[int, tuple[int, ...]]:
    cursor, out = 0, {}
    for j in sorted(order, key=lambda j: -sizes[j]):  # stable: keeps the sticky order inside a size
        out[j] = tuple(range(cursor, cursor + sizes[j]))
        cursor += sizes[j]
    return out


def first_fit_place(sizes: dict[int, int], previous: dict[int, tuple[int, ...]], num_gpus: int,
                    gpn: int) -> dict[int, tuple[int, ...]]:
    """Non-migrating consolidated-else-spread placement (see module docstring)."""
    total = sum(sizes.values())
    if total > num_gpus:
        raise ValueError(f"allocation of {total} GPUs exceeds the cluster's {num_gpus}")
    free = np.ones(num_gpus, dtype=bool)
    out: dict[int, tuple[int, ...]] = {}
    for j, n in sizes.items():
        p = previous.get(j)
        if p and len(p) == n:
            out[j] = p
            free[list(p)] = False
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
            whole = np.flatnonzero(per_node == gpn)
            for k in whole[: n // gpn]:
                gpus.extend(range(k * gpn, (k + 1) * gpn))
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


def placement_shape(gpus: tuple[int, ...], gpn: int) -> tuple[int, bool]:
    """``(r, multi_node)`` of a GPU set: the most GPUs on one node, and whether it spans nodes."""
    if not gpus:
        return 0, False
    nodes = [g // gpn for g in gpus]
    counts = np.bincount(nodes)
    return int(counts.max()), int(np.count_nonzero(counts)) > 1
