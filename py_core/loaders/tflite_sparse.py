"""TFLite sparse tensors (the DENSIFY operator's input) made dense at load time.

Format: https://github.com/tensorflow/tensorflow/blob/master/tensorflow/compiler/mlir/lite/schema/schema.fbs
(`SparsityParameters`).  A sparse tensor of rank r is stored as a tree of r + k levels (k blocked dimensions),
walked in `traversal_order`: levels 0..r-1 are the original dimensions (blocked ones counted in blocks),
levels r..r+k-1 the positions inside a block, and `block_map[j]` is the original dimension block level r + j
splits.  Each level is DENSE (every `dense_size` child) or SPARSE_CSR (children `array_indices[s[p]:s[p+1]]`
of parent p, with s = `array_segments`).  The stored values are the leaves in depth-first order.

This mirrors TFLite's `FormatConverter::Populate`, level by level over whole arrays instead of recursing
per element: a level turns the arrays of parent positions into arrays of child positions, keeping depth-first
order because every parent's children stay contiguous and in order.

The metadata is checked against the tensor's shape and the stored arrays before anything is allocated (a
flipped byte in a model must not make this allocate more than the file can justify): every intermediate
position array is at most as long as a stored array, and the dense result at most MAX_EXPANSION times the
stored values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DENSE, SPARSE_CSR = 0, 1
# Dense elements per stored value the loader accepts: 256 admits 99.6% sparse weights (real sparse models are
# 50-90%), while a corrupted extent cannot turn a few stored bytes into gigabytes.
MAX_EXPANSION = 256
MIN_DENSE_LIMIT = 1 << 16  # small tensors may be any sparsity


@dataclass(frozen=True)
class Level:
    """One level of the storage tree: DENSE with `dense_size`, or SPARSE_CSR with segments and indices."""

    format: int
    dense_size: int = 0
    segments: np.ndarray | None = None
    indices: np.ndarray | None = None


def densify(values: np.ndarray, shape: Sequence[int], traversal_order: Sequence[int],
            block_map: Sequence[int], levels: Sequence[Level]) -> np.ndarray:
    """The dense array of `shape` whose non-stored elements are zero (TFLite DENSIFY on a constant)."""
    block_size = _check(values.size, shape, traversal_order, block_map, levels)
    # positions and indices are intp: np.repeat and fancy indexing refuse int64 where intp is int32 (Pyodide)
    # parent position in the previous level's element array, and one index column per level walked so far
    pos = np.zeros(1, dtype=np.intp)
    columns: list[np.ndarray] = []
    for level in levels:
        if level.format == DENSE:
            size = level.dense_size
            columns = [np.repeat(c, size) for c in columns]
            idx = np.tile(np.arange(size, dtype=np.intp), len(pos))
            pos = np.repeat(pos, size) * size + idx
        elif level.format == SPARSE_CSR:
            assert level.segments is not None and level.indices is not None
            seg = level.segments.astype(np.intp)
            start, count = seg[pos], seg[pos + 1] - seg[pos]
            # the children of every parent, concatenated: start[p] + 0..count[p]-1, p in order
            offsets = np.arange(int(count.sum()), dtype=np.intp) - np.repeat(np.cumsum(count) - count, count)
            pos = np.repeat(start, count) + offsets
            columns = [np.repeat(c, count) for c in columns]
            idx = level.indices.astype(np.intp)[pos]
        columns.append(idx)
    rank = len(shape)
    coords = [np.zeros(len(pos), dtype=np.intp) for _ in range(rank)]
    for level, dim in enumerate(traversal_order[:rank]):
        coords[dim] = columns[level]
    for level in range(rank, len(levels)):
        j = traversal_order[level] - rank
        dim = block_map[j]
        coords[dim] = coords[dim] * block_size[j] + columns[level]
    out = np.zeros(tuple(shape), dtype=values.dtype)
    out[tuple(coords)] = values.reshape(-1)
    return out


def _check(stored: int, shape: Sequence[int], traversal_order: Sequence[int], block_map: Sequence[int],
           levels: Sequence[Level]) -> list[int]:
    """Validate the metadata without allocating; the block sizes.  ValueError says what is inconsistent."""
    rank, k = len(shape), len(block_map)
    if len(traversal_order) != len(levels) or len(levels) != rank + k:
        raise ValueError(f"sparsity: {len(levels)} dimension metadata for rank {rank}, traversal order "
                         f"{list(traversal_order)} and block map {list(block_map)}")
    if sorted(traversal_order[:rank]) != list(range(rank)) or \
            sorted(traversal_order[rank:]) != list(range(rank, rank + k)):
        raise ValueError(f"sparsity: traversal order {list(traversal_order)} is not a permutation of the "
                         f"{rank} dimensions followed by the {k} block dimensions")
    if sorted(block_map) != sorted(set(block_map)) or any(not 0 <= d < rank for d in block_map):
        raise ValueError(f"sparsity: block map {list(block_map)} does not name distinct dimensions of rank {rank}")
    if any(d < 1 for d in shape):
        raise ValueError(f"sparsity: shape {list(shape)} has a dimension below 1")
    # as in FormatConverter: block j's size is the dense size of the level traversal_order[rank + j] names
    block_size = [levels[traversal_order[rank + j]].dense_size for j in range(k)]
    for j, dim in enumerate(block_map):
        if block_size[j] < 1 or shape[dim] % block_size[j]:
            raise ValueError(f"sparsity: block size {block_size[j]} does not divide dimension {dim} "
                             f"({shape[dim]})")
    limit = max(stored * MAX_EXPANSION, MIN_DENSE_LIMIT)
    if math.prod(shape) > limit:
        raise ValueError(f"sparsity: {stored} stored values cannot justify a dense shape {list(shape)} "
                         f"({math.prod(shape)} elements; at most {MAX_EXPANSION} per stored value)")
    count = 1  # positions at the current level, computed before any array of that length exists
    for n, level in enumerate(levels):
        t = traversal_order[n]
        if t < rank:
            extent = shape[t] // block_size[block_map.index(t)] if t in block_map else shape[t]
        else:
            extent = block_size[t - rank]
        if level.format == DENSE:
            if level.dense_size != extent:
                raise ValueError(f"sparsity: level {n} is dense with size {level.dense_size}, its dimension has "
                                 f"{extent}")
            count *= extent
        elif level.format == SPARSE_CSR:
            seg, idx = level.segments, level.indices
            assert seg is not None and idx is not None
            if seg.size != count + 1 or seg[0] != 0 or seg[-1] != idx.size or np.any(np.diff(seg) < 0):
                raise ValueError(f"sparsity: level {n}'s {seg.size} segments do not delimit {idx.size} indices "
                                 f"for {count} parents")
            if idx.size and (idx.min() < 0 or idx.max() >= extent):
                raise ValueError(f"sparsity: level {n} has indices outside 0..{extent - 1}")
            count = int(idx.size)
        else:
            raise ValueError(f"sparsity: unknown dimension format {level.format} at level {n}")
    if count != stored:
        raise ValueError(f"sparsity: the metadata describes {count} stored values, the buffer holds {stored}")
    return block_size
