"""The top-``k`` step every index and the slider share: checking ``k`` and the ids to leave out, and
folding the blocks of a scan into the running top-``k`` (docs/design.md §4).

A scan scores the gallery block by block so that memory stays bounded; :class:`RunningTopK` keeps
each query's best ``k`` so far, folding each block in as it comes (at most ``2 k`` candidates per
query are held at once), and :func:`merge_top_k` is the same fold over finished parts (the reduce
step of a sharded search). Math core only: torch, no I/O.
"""
from __future__ import annotations

import numbers

import torch

from ._validation import ArrayLike, as_numeric_tensor


def exclusion_matrix(exclude: ArrayLike | None, n_queries: int, n_gallery: int,
                     device: torch.device) -> torch.Tensor | None:
    """Gallery ids to leave out per query, checked.

    Parameters
    ----------
    exclude : ``(Q,)`` or ``(Q, m)`` integer gallery ids, ``-1`` for none; or ``None``.
    n_queries : ``Q``. n_gallery : the gallery size ``G``. device : where the result goes.

    Returns
    -------
    ``(Q, m)`` long tensor on ``device`` (``-1`` pads rows), or ``None`` for ``exclude=None``.
    Ids must be integers from ``-1`` to ``G - 1`` (else ``ValueError``), so a mistyped id is never
    silently ignored.
    """
    if exclude is None:
        return None
    ids = as_numeric_tensor(exclude, "exclude", embeddings=False)
    if ids.is_floating_point():
        raise ValueError(f"exclude must hold integer gallery ids (-1 for none); got dtype {ids.dtype}. "
                         "Cast the ids to int.")
    ids = ids.to(device).long()
    ids = ids[:, None] if ids.ndim == 1 else ids
    if ids.ndim != 2 or ids.shape[0] != n_queries:
        raise ValueError(
            f"exclude must hold one row of gallery ids per query, shape ({n_queries},) or ({n_queries}, m); "
            f"got shape {tuple(ids.shape)}."
        )
    if ids.numel() and (int(ids.min()) < -1 or int(ids.max()) >= n_gallery):
        raise ValueError(f"exclude holds ids outside -1..{n_gallery - 1} (min {int(ids.min())}, max "
                         f"{int(ids.max())}); use gallery positions, and -1 to pad a row.")
    return ids


def check_top_k(k: int, n_gallery: int, exclude: torch.Tensor | None) -> int:
    """``k`` as an int, refused unless it is a whole number from 1 to the items left per query.

    Parameters
    ----------
    k : results asked for per query. n_gallery : the gallery size ``G``.
    exclude : an :func:`exclusion_matrix` ``(Q, m)``, or ``None``: ``m`` ids are left out per query.

    Returns
    -------
    ``int(k)``; ``ValueError`` naming the range ``1 .. G - m`` otherwise.
    """
    width = 0 if exclude is None else exclude.shape[1]
    available = n_gallery - width
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1 or k > available:
        raise ValueError(
            f"k={k!r} must be an integer from 1 to {available} (the gallery has {n_gallery} "
            f"items{f', {width} excluded per query' if width else ''}); lower k."
        )
    return int(k)


def mask_excluded(scores: torch.Tensor, exclude: torch.Tensor, start: int) -> None:
    """Set ``scores[i, exclude[i, j] - start]`` to ``-inf`` in place where the id falls in this block.

    Parameters
    ----------
    scores : ``(Q, n)`` scores of gallery items ``start .. start + n - 1``.
    exclude : ``(Q, m)`` global gallery ids (``-1`` pads). start : the block's first global id.
    """
    local = exclude - start
    valid = (local >= 0) & (local < scores.shape[1])
    rows = torch.arange(scores.shape[0], device=scores.device)[:, None].expand_as(local)
    scores[rows[valid], local[valid]] = float("-inf")


def merge_top_k(scores: list[torch.Tensor], ids: list[torch.Tensor], k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` largest scores of several parts, with their ids.

    Parameters
    ----------
    scores : ``(Q, k_i)`` score tensors, one per part. ids : their ``(Q, k_i)`` ids. k : how many to keep.

    Returns
    -------
    ``(scores, ids)``, each ``(Q, min(k, sum k_i))``, best first, on the first part's device.
    """
    device = scores[0].device
    all_scores = torch.cat([part.to(device) for part in scores], dim=1)
    all_ids = torch.cat([part.to(device) for part in ids], dim=1)
    best, order = torch.topk(all_scores, min(k, all_scores.shape[1]), dim=1)
    return best, torch.gather(all_ids, 1, order)


class RunningTopK:
    """Each query's ``k`` best so far over the blocks of a scan: the one fold of a block into the
    running top-``k``, used by every index and by the slider's pass.

    Each :meth:`add` keeps the block's own best ``min(k, n)`` and merges them with those held, so at
    most ``2 k`` candidates per query are held at once, whatever the block sizes.

    Parameters
    ----------
    k : results kept per query (a positive int; a scan over fewer items keeps them all).
    """

    def __init__(self, k: int):
        self.k = k
        self._best: tuple[torch.Tensor, torch.Tensor] | None = None

    def add(self, scores: torch.Tensor, ids: torch.Tensor) -> None:
        """Fold one block in.

        Parameters
        ----------
        scores : ``(Q, n)`` the block's scores, larger is better (``-inf`` for an item left out), any order.
        ids : ``(Q, n)`` their ids (global gallery positions), same device as ``scores``.
        """
        top, order = self._block_top(scores)
        self._fold(top, torch.gather(ids, 1, order))

    def add_block(self, scores: torch.Tensor, start: int) -> None:
        """Fold in a block whose columns are the consecutive gallery ids ``start .. start + n - 1``.

        Once ``k`` are held, only the block's columns that beat some query's ``k``-th best so far
        are ranked (one comparison over the block, then a top-``k`` over the few left): a long
        scan's later blocks cost little more than reading them. A column that only ties a
        ``k``-th best is left out, as a tie may be; a NaN is always kept, so that it reaches the
        result and the caller's check of it.

        Parameters
        ----------
        scores : ``(Q, n)`` the block's scores, larger is better. start : the id of its first column.
        """
        kth = self.kth_best()
        if kth is not None:
            live = (~(scores <= kth[:, None])).any(dim=0).nonzero()[:, 0]
            if live.shape[0] < scores.shape[1] // 2:
                if live.shape[0]:
                    top, order = self._block_top(scores[:, live])
                    self._fold(top, live[order] + start)
                return
        top, order = self._block_top(scores)
        self._fold(top, order + start)

    def kth_best(self) -> torch.Tensor | None:
        """Each query's ``k``-th best score so far ``(Q,)``, below which no score can enter; ``None``
        while fewer than ``k`` are held."""
        return self._best[0][:, -1] if self._best is not None and self._best[0].shape[1] == self.k else None

    def result(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scores, ids)``, each ``(Q, min(k, items seen))``, best first; ``ValueError`` before any block."""
        if self._best is None:
            raise ValueError("RunningTopK.result() before any block was added: scan at least one block.")
        return self._best

    def _block_top(self, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A block's best ``min(k, n)`` scores ``(Q, .)`` and their columns in it."""
        return torch.topk(scores, min(self.k, scores.shape[1]), dim=1)

    def _fold(self, scores: torch.Tensor, ids: torch.Tensor) -> None:
        self._best = (scores, ids) if self._best is None else merge_top_k(
            [self._best[0], scores], [self._best[1], ids], self.k)
