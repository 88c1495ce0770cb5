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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DENSE, SPARSE_CSR = 0, 1


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
    rank = len(shape)
    if len(traversal_order) != len(levels) or len(levels) != rank + len(block_map):
        raise ValueError(f"sparsity: {len(levels)} dimension metadata for rank {rank}, traversal order "
                         f"{list(traversal_order)} and block map {list(block_map)}")
    # as in FormatConverter: block j's size is the dense size of the level traversal_order[rank + j] names
    block_size = [levels[traversal_order[rank + j]].dense_size for j in range(len(block_map))]
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
        else:
            raise ValueError(f"sparsity: unknown dimension format {level.format}")
        columns.append(idx)
    if len(pos) != values.size:
        raise ValueError(f"sparsity: the metadata describes {len(pos)} stored values, the buffer holds "
                         f"{values.size}")
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
