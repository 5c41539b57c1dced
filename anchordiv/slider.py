"""A certified ``p`` slider for a two-component :class:`~anchordiv.MixtureAnchors` (docs/design.md §10).

For a query ``x`` and a mixture ``P = w_A P_A + w_B P_B``, let ``r`` be the query's responsibility
for A, ``r = sigmoid(lambda)`` with the log-odds ``lambda = log w_A - log w_B + kappa_A(eta_x) -
kappa_B(eta_x)`` (monotone increasing in ``p`` for every parametrisation). Then, exactly,

    D(x -> y) = c(r) - f_y(r),
    f_y(r)    = r a_y + (1 - r) b_y - log(r exp(alpha_y) + (1 - r) exp(beta_y)),
    c(r)      = r a_x + (1 - r) b_x,

with ``a_y = grad kappa_A(eta_x) . eta_y``, ``b_y = grad kappa_B(eta_x) . eta_y`` (``a_x``, ``b_x``
the same with ``eta_x``), ``alpha_y = kappa_A(eta_y) - kappa_A(eta_x)`` and ``beta_y =
kappa_B(eta_y) - kappa_B(eta_x)``. ``f_y`` is linear minus the log of a positive linear function of
``r``, so it is convex in ``r``. One pass over the gallery keeps the top-``k'`` items by ``f`` at a
grid of ``r`` values; an item kept at neither neighbour ``r_j <= r <= r_{j+1}`` has ``f_y(r)`` below
the chord of the thresholds ``t_j``, ``t_{j+1}`` (the ``k'``-th best scores there). When the
``k``-th best candidate at ``r`` reaches that chord, the top-``k`` among the candidates is the
exact top-``k`` (up to exact ties); otherwise :meth:`MixtureSlider.at` falls back to the exact
search. Math core only: torch and numpy, no I/O.

Ties (docs/design.md §9-§10): a certified answer is the top-``k`` of the float64 divergences over
the stored ``eta_y``, up to reordering among items within the certificate's relative slack
(``1e-10``). The exact search rounds in the gallery's dtype, by up to its ``eps`` per item, so a
certified answer equals the exact search up to reordering among items whose divergences differ by
less than ``2 eps``, and has the same ``k`` items except where the ``k``-th and ``(k+1)``-th are
tied within ``2 eps``.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Iterator, Protocol, runtime_checkable

import numpy as np
import torch

from ._validation import ArrayLike, as_numeric_tensor, check_positive_int
from .models.base import AnchorModel
from .models.mixture import MixtureAnchors
from .topk import RunningTopK, check_top_k, merge_top_k

# The p path's coarse grid (query_path): on the built-in world it left no step of 4,040 uncovered
# and costs a third of the default grid's pass (docs/benchmarks.md has the measurement behind 3).
PATH_GRID = 3
DEFAULT_GRID = 31            # interior grid points, uniform in log-odds; r = 0 and r = 1 are added
DEFAULT_TAIL = 1e-3          # the default grid spans the log-odds of p in [TAIL, 1 - TAIL]
MIN_CANDIDATES = 256         # default k' = max(4 k, MIN_CANDIDATES): at G = 10^6, 64 certified 72-92% of moves, 256 all
CERTIFICATE_RTOL = 1e-10     # slack on the certificate, far above float64 round-off of f
FIRST_BLOCK_ROWS = 4096      # rows a pass scores whole before its floors skip rows (at least 8 k')


def log_sigmoid(z: np.ndarray | float) -> np.ndarray:
    """``log sigmoid(z) = -log(1 + exp(-z))``, stable for all ``z`` including ``+-inf``."""
    return -np.logaddexp(0.0, -np.asarray(z, dtype=np.float64))


def sigmoid_gap(low: np.ndarray | float, high: np.ndarray | float) -> np.ndarray:
    """``sigmoid(high) - sigmoid(low)`` without cancellation, elementwise for ``low <= high``
    (``+-inf`` allowed): ``sigmoid(h) - sigmoid(l) = sigmoid(h) sigmoid(-l) (1 - exp(l - h))``."""
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # l - h is NaN where both are the same infinity: a gap of 0
        gap = np.exp(log_sigmoid(high) + log_sigmoid(-low)) * -np.expm1(low - high)
    return np.where(low == high, 0.0, gap)


def mixture_scores(log_r: Any, log_1mr: Any, a: Any, b: Any, alpha: Any, beta: Any, lib: Any = np) -> Any:
    """Ranking scores ``f_y(r)`` (larger is closer), broadcasting items against grid points.

    ``f_y(r) = b_y + r (a_y - b_y) - m_y - log(r exp(alpha_y - m_y) + (1 - r) exp(beta_y - m_y))``
    with ``m_y = max(alpha_y, beta_y)``: the exponentials are per item and at most 1, so the cost
    per item and point is one logarithm, a third of ``logaddexp(log r + alpha_y, log(1 - r) +
    beta_y)``'s. ``log r`` and ``log(1 - r)`` are passed separately so that ``r = 0`` and ``r = 1``
    (a ``-inf`` log) and ``r`` within round-off of 1 stay exact. Where the sum in the logarithm
    would leave float64's normal range (``r`` below ``1e-290`` against ``exp(beta_y - m_y)`` as
    small, which takes a scale in the hundreds), every score is taken through ``logaddexp``
    instead. ``lib`` is ``numpy`` or ``torch``.
    """
    r, rest = lib.exp(log_r), lib.exp(log_1mr)
    peak = lib.maximum(alpha, beta)
    inside = r * lib.exp(alpha - peak) + rest * lib.exp(beta - peak)
    if bool((inside >= _NORMAL_SUM).all()):
        return (b - peak) + r * (a - b) - lib.log(inside)
    return b + r * (a - b) - lib.logaddexp(log_r + alpha, log_1mr + beta)


_NORMAL_SUM = 1e-290  # mixture_scores' sums below this lose relative precision to subnormal rounding


def _check_query(query: ArrayLike, dim: int) -> torch.Tensor:
    """One query as a ``(1, d)`` tensor (a ``(d,)`` vector or a single-row matrix)."""
    tensor = as_numeric_tensor(query, "query")
    if tensor.ndim == 2 and tensor.shape[0] == 1:
        tensor = tensor[0]
    if tensor.ndim != 1 or tensor.shape[0] != dim:
        raise ValueError(f"query must be one embedding of shape ({dim},); got shape {tuple(tensor.shape)}. "
                         "Slide one query at a time.")
    return tensor[None, :]


def _check_exclude(exclude: Any, n_gallery: int) -> int | None:
    """``exclude`` as one gallery id, or ``None`` (``None`` or ``-1``: nothing excluded)."""
    if exclude is None:
        return None
    if isinstance(exclude, (torch.Tensor, np.ndarray)):
        if (exclude.size if isinstance(exclude, np.ndarray) else exclude.numel()) != 1:
            raise ValueError(f"exclude must be one gallery id (or -1 / None); got shape {tuple(exclude.shape)}.")
        exclude = exclude.reshape(()).item()
    if isinstance(exclude, bool) or not isinstance(exclude, numbers.Integral) or not -1 <= exclude < n_gallery:
        raise ValueError(f"exclude must be one integer gallery id from -1 (none) to {n_gallery - 1}; got {exclude!r}.")
    return None if exclude == -1 else int(exclude)


def _check_p(p: Any) -> float:
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"p must be a number from 0 to 1 (the weight of component A); got {p!r}.")
    return float(p)


@runtime_checkable
class SliderIndex(Protocol):
    """What :class:`MixtureSlider` needs from an index: :class:`~anchordiv.AnchorIndex` and
    :class:`~anchordiv.sharded.ShardedAnchorIndex` both offer it.

    * ``model``: the fitted model the stored terms are for (the slider needs a two-component
      :class:`~anchordiv.MixtureAnchors`); ``fit_token``: the fit those terms belong to;
      ``reverse``: the direction (the slider needs ``False``); ``device``: where results go;
      ``len(index)``: the gallery size ``G``.
    * ``grid_top_k(job)``: the slider's one pass, a :class:`GridPass`, over the whole gallery:
      ``(scores (m, k'), ids (m, k'))``, each grid point's best first.
    * ``gallery_rows(ids)``: ``(eta (n, d), kappa (n, 2))`` of the gallery items at positions ``ids`` ``(n,)``.
    * ``with_model(model).search(queries, k, exclude)``: the exact search at other weights, the
      fallback of an uncertified move (see :class:`anchordiv.search.Index`).
    """

    model: AnchorModel
    reverse: bool
    device: torch.device

    @property
    def fit_token(self) -> Hashable: ...

    def __len__(self) -> int: ...

    def grid_top_k(self, job: "GridPass") -> tuple[torch.Tensor, torch.Tensor]: ...

    def gallery_rows(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def with_model(self, model: AnchorModel) -> "SliderIndex": ...

    def search(self, queries: ArrayLike, k: int, exclude: ArrayLike | None = None) -> tuple[Any, Any]: ...


@dataclass(frozen=True)
class GridPass:
    """The slider's one pass over a gallery, as a job any engine can run on its part of the gallery
    (small and picklable, so it travels to Ray workers) and whose parts merge exactly.

    ``grads`` ``(d, 2)`` float64 ``grad kappa_A(eta_x)``, ``grad kappa_B(eta_x)``; ``kappa_x`` ``(2,)``
    ``kappa_k(eta_x)``; ``log_r``, ``log_1mr`` ``(m,)`` the grid's ``log r_j`` and ``log(1 - r_j)``;
    ``exclude`` a global gallery position to leave out (or ``None``); ``kept`` ``k'``.
    """

    grads: torch.Tensor
    kappa_x: np.ndarray
    log_r: np.ndarray
    log_1mr: np.ndarray
    exclude: int | None
    kept: int

    def run(self, blocks: Iterable[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]
            ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each grid point's top-``k'`` ``f`` scores ``(m, k'')`` (descending along each row) and their
        global positions ``(m, k'')`` over ``blocks`` of ``(start, rows (n, d), factors (n,), kappa
        (n, 2))`` with ``eta_y = factors * rows`` (as ``iter_gallery_terms`` gives them)."""
        best = RunningTopK(self.kept)
        grads = grid = kappa_x = None
        for start, rows, factors, kappa in _first_block_cut(blocks, max(FIRST_BLOCK_ROWS, 8 * self.kept)):
            device = rows.device
            if grads is None or grads.device != device or grads.dtype != rows.dtype:
                # The gradients as a transposed (2, d) block: torch's (n, d) @ (d, 2) is several times
                # slower on the CPU when the right factor is row-major. Made once per device and dtype.
                grads = self.grads.T.to(device, rows.dtype).contiguous().T
                grid = [torch.tensor(values, device=device)[:, None] for values in (self.log_r, self.log_1mr)]
                kappa_x = torch.tensor(self.kappa_x, device=device)
            # The mat-vec at the gallery's precision (float32: the pass's cost), the rest in float64;
            # MixtureSlider._pass_slack bounds the float32 rounding (and so a float64 gallery's too).
            # (2, n) through the transposed view: several times faster than broadcasting along (n, 2).
            products = (rows @ grads).T
            excluded = (self.exclude - start if self.exclude is not None and 0 <= self.exclude - start < rows.shape[0]
                        else None)
            kth = best.kth_best()
            if kth is None:
                scores = self._scores(grid, *self.block_terms(products, factors, kappa, kappa_x))    # (m, n)
                if excluded is not None:
                    scores[:, excluded] = float("-inf")
                best.add_block(scores, start)
                continue
            floor = kth - 1e-12 * (1.0 + kth.abs())
            screened = self.screen(products, factors, kappa, float(floor.min()))
            terms = self.block_terms(products[:, screened], factors[screened], kappa[screened], kappa_x)
            chosen = self.live_rows(terms, grid, floor)
            live = screened[chosen]
            if excluded is not None:
                kept = live != excluded
                chosen, live = chosen[kept], live[kept]
            if live.shape[0]:
                scores = self._scores(grid, *(term[chosen] for term in terms))
                best.add(scores, (live + start)[None, :].expand_as(scores))
        return best.result()

    @staticmethod
    def block_terms(products: torch.Tensor, factors: torch.Tensor, kappa: torch.Tensor, kappa_x: torch.Tensor
               ) -> list[torch.Tensor]:
        """``a``, ``b``, ``alpha``, ``beta`` ``(n,)`` each in float64 from a block's products ``row .
        g_k`` ``(2, n)``, ``factors`` ``(n,)`` and ``kappa_k(eta_y)`` ``(n, 2)``."""
        ab = products.to(torch.float64) * factors.to(torch.float64)[None, :]
        shifted = kappa.to(torch.float64) - kappa_x                                                  # (n, 2)
        return [ab[0], ab[1], shifted[:, 0], shifted[:, 1]]

    def screen(self, products: torch.Tensor, factors: torch.Tensor, kappa: torch.Tensor, floor: float
                ) -> torch.Tensor:
        """The rows ``(n_s,)`` of a block that :meth:`live_rows` might keep, found at the pass's own
        precision, so that only they are taken to float64: a row is dropped when both ``factor_y
        (row_y . g_k) - kappa_k(eta_y)`` fall below ``floor + kappa_k(eta_x)`` by more than their
        rounding. Each value is two roundings away from its float64 counterpart (the product of two
        float32 numbers is exact in float64), at most ``u (2 |v| + |kappa|)``, and the threshold one
        more, ``u |t|``; the margin is twice their sum. A NaN stays."""
        values = products * factors[None, :] - kappa.T                                              # (2, n)
        unit = float(torch.finfo(values.dtype).eps)
        spread = 2.0 * float(values.abs().amax()) + float(kappa.abs().amax())
        thresholds = [floor - float(shift) for shift in self.kappa_x]
        cuts = torch.tensor([[t - 2.0 * unit * (spread + abs(t))] for t in thresholds], dtype=values.dtype,
                            device=values.device)
        return (~(values <= cuts).all(dim=0)).nonzero()[:, 0]

    @staticmethod
    def live_rows(terms: list[torch.Tensor], grid: list[torch.Tensor], floor: torch.Tensor) -> torch.Tensor:
        """The rows ``(n_live,)`` of ``terms`` that may beat some grid point's ``k'``-th best so far,
        lowered by a relative ``1e-12`` to ``floor`` ``(m,)``.

        ``f_y`` is convex in ``r``, so ``f_y(r_j) <= (1 - r_j) f_y(0) + r_j f_y(1) <= max(f_y(0),
        f_y(1))``, with ``f_y(0) = b_y - beta_y`` and ``f_y(1) = a_y - alpha_y``: a row below every
        floor at both bounds never enters, and only the others are scored (``f`` at every grid
        point costs several times this test). The relative ``1e-12`` is far above float64
        round-off and far below the certificate's slack; a NaN stays live, so that it reaches the
        result."""
        a, b, alpha, beta = terms
        at_zero, at_one = b - beta, a - alpha
        live = (~(torch.maximum(at_zero, at_one) <= floor.min())).nonzero()[:, 0]
        if live.shape[0]:
            log_r, log_1mr = grid
            chords = torch.exp(log_1mr) * at_zero[live][None, :] + torch.exp(log_r) * at_one[live][None, :]
            live = live[(~(chords <= floor[:, None])).any(dim=0)]
        return live

    @staticmethod
    def _scores(grid: list[torch.Tensor], a: torch.Tensor, b: torch.Tensor, alpha: torch.Tensor,
                beta: torch.Tensor) -> torch.Tensor:
        """:func:`mixture_scores` at every grid point ``(m, n)``, grid points by items so that each
        point's top-``k'`` runs along contiguous memory. At ``r = 0`` and ``r = 1`` (where a grid has
        them, first and last) ``f`` is linear, ``b - beta`` and ``a - alpha``: no ``logaddexp``."""
        log_r, log_1mr = grid
        first = 1 if bool(torch.isneginf(log_r[0])) else 0
        last = log_r.shape[0] - (1 if bool(torch.isneginf(log_1mr[-1])) else 0)
        scores = torch.empty((log_r.shape[0], a.shape[0]), dtype=a.dtype, device=a.device)
        if first:
            torch.sub(b, beta, out=scores[0])
        if last < log_r.shape[0]:
            torch.sub(a, alpha, out=scores[-1])
        if last > first:
            scores[first:last] = mixture_scores(log_r[first:last], log_1mr[first:last], a[None], b[None],
                                                alpha[None], beta[None], lib=torch)
        return scores

    def merge(self, parts: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        """The top-``k'`` per grid point of several :meth:`run` results (the reduce step), on the first's device."""
        return merge_top_k([part[0] for part in parts], [part[1] for part in parts], self.kept)


def _first_block_cut(blocks: Iterable[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]], rows: int
                     ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """``blocks`` with the first cut after ``rows`` rows when it is much longer: the top-``k'`` of
    those rows sets the floors that let most of the rest be skipped (:meth:`GridPass.live_rows`),
    where a whole first block (a gallery in memory is often one) would be scored at every grid point."""
    blocks = iter(blocks)
    for start, rows_, factors, kappa in blocks:
        if rows_.shape[0] > 2 * rows:
            yield start, rows_[:rows], factors[:rows], kappa[:rows]
            yield start + rows, rows_[rows:], factors[rows:], kappa[rows:]
        else:
            yield start, rows_, factors, kappa
        break
    yield from blocks


DEFAULT_PATH_STEPS = 101     # p = 0, 0.01, ..., 1: the explorer's slider positions


@dataclass(frozen=True)
class SliderPath:
    """The exact top-``k`` of one query at every position of a ``p`` slider: what
    :meth:`MixtureSlider.path` returns, all numpy, on the CPU.

    ``p`` ``(S,)`` the weights of A, ascending; ``values`` ``(S, k)`` the divergences ``D(x -> y)``
    at each ``p``, ascending along each row; ``ids`` ``(S, k)`` their gallery positions;
    ``certified`` ``(S,)`` whether the step came from the slider's candidates under its
    certificate (``False``: from the exact search at that ``p``). Every step is exact either way.
    """

    p: np.ndarray
    values: np.ndarray
    ids: np.ndarray
    certified: np.ndarray

    def __len__(self) -> int:
        return int(self.p.shape[0])

    def step_of(self, p: float) -> int:
        """The step whose ``p`` is nearest to ``p`` (the lower on a tie)."""
        return int(np.argmin(np.abs(self.p - _check_p(p))))

    @property
    def shown_ids(self) -> np.ndarray:
        """Every gallery id some step shows, ascending: the images a player of the path needs."""
        return np.unique(self.ids)

    def ranking_runs(self, k: int | None = None) -> np.ndarray:
        """The runs of consecutive steps whose top ``k`` (default: all the path's) shows the same
        images, in whatever order: ``(R, 2)`` int64, each run's first and last step, ascending.

        A sweep that stops once per run shows every change of *which* images are near the query;
        the swaps of order inside a run are as many again (about half the steps of a typical
        path), too many to hold each one long enough to read."""
        top = np.sort(self.ids[:, :self.ids.shape[1] if k is None else k], axis=1)
        starts = np.flatnonzero(np.r_[True, np.any(top[1:] != top[:-1], axis=1)])
        return np.stack([starts, np.r_[starts[1:] - 1, len(self) - 1]], axis=1).astype(np.int64)

    def sweep_stops(self, k: int | None = None) -> np.ndarray:
        """The step a sweep shows for each run of :meth:`ranking_runs` ``(R,)``, ascending: the
        middle of the run, but ``p``'s ends (the first step and the last) for the first and the
        last run, so that a sweep goes from one anchor set to the other. A path of one run stops
        at both ends."""
        middles = self.ranking_runs(k).sum(axis=1)[1:-1] // 2
        return np.unique(np.r_[0, middles, len(self) - 1]).astype(np.int64)


def path_positions(p: int | ArrayLike) -> np.ndarray:
    """Slider positions ``(S,)``: ``p`` evenly spaced weights from 0 to 1 (an int of at least 2), or
    the given weights in ``[0, 1]`` (sorted, duplicates dropped)."""
    if isinstance(p, (bool, np.bool_)):
        raise ValueError(f"p must be a number of steps (an int >= 2) or weights in [0, 1]; got {p!r}.")
    if isinstance(p, numbers.Integral):
        if p < 2:
            raise ValueError(f"a path needs at least 2 steps (p = 0 and p = 1); got {p!r}.")
        return np.round(np.linspace(0.0, 1.0, int(p)), 12)
    positions = np.unique(np.asarray(p, dtype=np.float64).ravel())
    if positions.size == 0 or not np.all((positions >= 0) & (positions <= 1)):
        raise ValueError(f"p must be a number of steps (an int >= 2) or weights in [0, 1]; got {p!r}.")
    return positions


@dataclass(frozen=True)
class AtPositions:
    """A slider grid at the query's log-odds of weights ``p`` ``(S,)`` (``MixtureSlider(grid=...)``):
    each of those positions is then a grid point, certified by its own ``k'``-th best."""

    p: np.ndarray


class MixtureSlider:
    """Top-``k`` for one query at any weight ``p`` of a two-component mixture, certified exact.

    Built by :meth:`anchordiv.AnchorIndex.slider` or :meth:`anchordiv.sharded.ShardedAnchorIndex.slider`.
    Construction makes one pass over the gallery, block by block: ``O(G d)`` (a float32 mat-vec)
    for ``a_y``, ``b_y`` plus ``O(G m)`` for ``f`` at ``m`` grid points, keeping the union of each grid
    point's top-``k'`` (``C <= m k'`` candidates), then reads only the candidates' rows. No
    ``(G, d)`` copy is made, so over a store the gallery is never held at float32. :meth:`at` then
    costs ``O(C)`` when the answer is certified and one exact search (``O(G d)``) when it is not.

    Parameters
    ----------
    index : a :class:`SliderIndex` (an :class:`~anchordiv.AnchorIndex` or
        :class:`~anchordiv.sharded.ShardedAnchorIndex`), query first, over a
        :class:`~anchordiv.MixtureAnchors` of two components; its model's parametrisation
        (literal, balanced or calibrated) maps ``p``.
    query : one embedding ``(d,)`` (or ``(1, d)``). k : results per move.
    exclude : one gallery id to leave out (the query's own position), ``-1`` or ``None`` for none.
    grid : ``None`` (31 interior points), an int ``m`` (``m`` interior points uniform in the query's
        log-odds ``lambda`` between ``lambda(p = 1e-3)`` and ``lambda(p = 1 - 1e-3)``),
        responsibilities ``r`` in ``[0, 1]``, or :class:`AtPositions` (the query's log-odds at those
        weights). ``r = 0`` and ``r = 1`` are always added.
    candidates : ``k'``, items kept per grid point (default ``max(4 k, 256)``).
    """

    def __init__(self, index: SliderIndex, query: ArrayLike, k: int = 10, exclude: Any = None,
                 grid: int | ArrayLike | None = None, candidates: int | None = None):
        self._check_index(index)
        self._index, self.model = index, index.model
        self._query = query
        self._like_tensor = isinstance(query, torch.Tensor)
        n_gallery = len(index)
        self.exclude = _check_exclude(exclude, n_gallery)
        available = n_gallery - (self.exclude is not None)
        self.k = check_top_k(k, n_gallery, None if self.exclude is None else torch.tensor([[self.exclude]]))
        kept = max(4 * self.k, MIN_CANDIDATES) if candidates is None else check_positive_int(candidates, "candidates")
        self._kept, self._everything = min(kept, available), kept >= available
        self._query_terms(_check_query(query, self.model.n_features_in_))
        self._log_odds_grid = self._make_grid(grid)
        self._one_pass()
        self._last_tops: tuple[bytes, tuple] | None = None

    # -- construction ------------------------------------------------------------------------------
    @staticmethod
    def _check_index(index: SliderIndex) -> None:
        model = index.model
        if not isinstance(model, MixtureAnchors):
            raise ValueError(f"slider needs an index over a MixtureAnchors of two components; this index's "
                             f"model is {type(model).__name__}. Build AnchorIndex(MixtureAnchors([a, b]), gallery) "
                             "or ShardedAnchorIndex(MixtureAnchors([a, b]), store).")
        if len(model.models) != 2:
            raise ValueError(f"slider needs a MixtureAnchors of two components (A weighted p, B 1 - p); this one has "
                             f"{len(model.models)}. Use index.with_model(...).search for other weights.")
        if index.reverse:
            raise ValueError("slider works in the query-first direction only (reverse=False): reverse divergences "
                             "are not convex in the query's responsibility. Use index.with_model(m).search instead.")
        if model.fit_token() != index.fit_token:
            raise ValueError("The mixture was refitted after this index was built; build a new index over it.")

    def _query_terms(self, query: torch.Tensor) -> None:
        """Per-component ``kappa_k(eta_x)``, ``grad kappa_k(eta_x)`` and ``grad kappa_k(eta_x) . eta_x``
        in float64, so the log-odds and ``c(r)`` are accurate to round-off."""
        eta = self.model.natural_parameters(query, "query").to(self._index.device, torch.float64)
        pairs = [component.cgf_grad_eta(eta) for component in self.model.models]
        self._kappa_x = np.array([float(kappa[0]) for kappa, _ in pairs])                     # (2,)
        self._grads = torch.stack([grad[0] for _, grad in pairs], dim=1)                     # (d, 2)
        self._self_scores = (eta[0] @ self._grads).cpu().numpy()                             # (2,): a_x, b_x

    def log_odds(self, p: float) -> float:
        """The query's log-odds for A at weight ``p``, ``lambda(p) = log w_A - log w_B + kappa_A(eta_x) -
        kappa_B(eta_x)``, with ``w`` the mixture's effective weights at ``p`` (``+-inf`` at the ends)."""
        return float(self._log_odds_of(self.model.log_weights_at([_check_p(p), 1.0 - _check_p(p)])[None, :])[0])

    def _log_odds_of(self, log_w: np.ndarray) -> np.ndarray:
        """The query's log-odds ``(S,)`` for rows of effective ``log w`` ``(S, 2)``."""
        terms = log_w + self._kappa_x
        with np.errstate(invalid="ignore"):
            difference = terms[:, 0] - terms[:, 1]
        return np.where(np.isneginf(terms[:, 0]), -np.inf, np.where(np.isneginf(terms[:, 1]), np.inf, difference))

    def responsibility(self, p: float) -> float:
        """``r(p) = sigmoid(lambda(p))``: the query's responsibility for A at weight ``p``."""
        return float(np.exp(log_sigmoid(self.log_odds(p))))

    def _make_grid(self, grid: int | ArrayLike | None) -> np.ndarray:
        """Sorted distinct log-odds ``lambda_j`` ``(m + 2,)`` with ``-inf`` (``r = 0``) and ``inf`` (``r = 1``)."""
        if isinstance(grid, AtPositions):
            interior = self._log_odds_of(self.model.log_weights_along(grid.p))
        elif grid is None or isinstance(grid, numbers.Integral):
            count = DEFAULT_GRID if grid is None else check_positive_int(grid, "grid")
            low, high = self.log_odds(DEFAULT_TAIL), self.log_odds(1.0 - DEFAULT_TAIL)
            interior = np.linspace(low, high, count)
        else:
            r = np.asarray(grid, dtype=np.float64).ravel()
            if r.size == 0 or not np.all((r >= 0) & (r <= 1)):
                raise ValueError(f"grid must be an int (points) or responsibilities in [0, 1]; got {grid!r}.")
            with np.errstate(divide="ignore"):
                interior = np.log(r) - np.log1p(-r)
        return np.unique(np.concatenate([[-np.inf], interior, [np.inf]]))

    def _one_pass(self) -> None:
        """Each grid point's top-``k'`` from the index's one pass (:class:`GridPass`), the thresholds
        ``t_j`` (the ``k'``-th best plus the pass's rounding bound, ``-inf`` when every item is
        kept), then only the candidates' rows, for their float64 terms ``a``, ``b``, ``alpha``, ``beta``."""
        job = GridPass(grads=self._grads.cpu(), kappa_x=self._kappa_x, log_r=log_sigmoid(self._log_odds_grid),
                       log_1mr=log_sigmoid(-self._log_odds_grid), exclude=self.exclude, kept=self._kept)
        best_scores, best_ids = self._index.grid_top_k(job)
        thresholds = best_scores[:, -1].cpu().numpy() + self._pass_slack()
        self._thresholds = np.full_like(thresholds, -np.inf) if self._everything else thresholds
        candidate_ids = torch.unique(best_ids).cpu()
        if self.exclude is not None:
            candidate_ids = candidate_ids[candidate_ids != self.exclude]
        eta, kappa = self._index.gallery_rows(candidate_ids)
        self._dtype = eta.dtype
        scores = eta.to(torch.float64) @ self._grads                                        # (C, 2)
        shifted = kappa.to(torch.float64) - torch.as_tensor(self._kappa_x, device=kappa.device)  # (C, 2)
        self._a, self._b, self._alpha, self._beta = (t.cpu().numpy() for t in
                                                     (scores[:, 0], scores[:, 1], shifted[:, 0], shifted[:, 1]))
        self.candidate_ids = candidate_ids.numpy()

    def _pass_slack(self) -> float:
        """A bound on ``|f_pass - f|`` from the pass's float32 ``a_y = factor_y (row_y . g_k)`` against
        ``eta_y . g_k`` with the float32 ``eta_y = fl(factor_y row_y)`` the candidates are scored with:
        a float32 dot product of length ``d`` errs by at most ``gamma_d sum_i |u_i v_i| <= gamma_d ||u||
        ||v||`` (Higham, Thm 3.1), rounding ``eta_y`` and the factor add two more roundings
        (``gamma_{d+2}``), ``||eta_y|| = scale`` up to float32 round-off (the 1.001), and ``f`` mixes
        ``a`` and ``b`` with weights ``r``, ``1 - r``. Added to the thresholds keeps certificates exact."""
        terms, unit = self._grads.shape[0] + 2, float(np.finfo(np.float32).eps) / 2
        gamma = terms * unit / (1.0 - terms * unit)
        grad_norms = torch.linalg.vector_norm(self._grads, dim=0).max().item()
        return gamma * grad_norms * float(self.model.scale) * 1.001

    # -- moving the slider -------------------------------------------------------------------------
    @property
    def n_candidates(self) -> int:
        """``C``, the number of distinct candidates kept (at most ``(m + 2) k'``)."""
        return int(self.candidate_ids.shape[0])

    @property
    def grid(self) -> np.ndarray:
        """The grid's responsibilities ``r_j`` ``(m + 2,)``, non-decreasing from 0 to 1: the points are
        distinct in log-odds, where the slider works, but those within float64 round-off of 1 read 1.0."""
        return np.exp(log_sigmoid(self._log_odds_grid))

    def bound(self, log_odds: float) -> float:
        """The chord ``(1 - t) t_j + t t_{j+1}``, ``t = (r - r_j) / (r_{j+1} - r_j)``, at ``r = sigmoid(log_odds)``
        between the neighbouring grid thresholds: no non-candidate scores above it (convexity of ``f``)."""
        return float(self._bounds(np.array([log_odds], dtype=np.float64))[0])

    def _bounds(self, log_odds: np.ndarray) -> np.ndarray:
        """:meth:`bound` at each of ``log_odds`` ``(S,)``."""
        grid, thresholds = self._log_odds_grid, self._thresholds
        j = np.clip(np.searchsorted(grid, log_odds, side="right") - 1, 0, len(grid) - 2)
        low, high = thresholds[j], thresholds[j + 1]
        t = sigmoid_gap(grid[j], log_odds) / sigmoid_gap(grid[j], grid[j + 1])
        with np.errstate(invalid="ignore"):
            chord = (1.0 - t) * low + t * high
        return np.where(log_odds == grid[j], low, np.where(np.isneginf(low) & np.isneginf(high), -np.inf, chord))

    def at(self, p: float) -> tuple[Any, Any, bool]:
        """The top-``k`` at weight ``p``: ``(values, ids, certified)``.

        ``values`` ``(k,)`` are the divergences ``D(x -> y)`` under ``model.with_weights([p, 1 - p])``
        ascending, ``ids`` ``(k,)`` gallery positions (numpy for a numpy query, tensors on the index's
        device for a tensor query, as :meth:`AnchorIndex.search` gives for one query). ``certified`` is
        ``True`` when the ``k``-th best candidate's score reaches the chord of the grid thresholds (the
        answer is then exact, up to exact ties, from ``O(C)`` work); ``False`` means the answer came
        from the exact search at ``p`` instead (a pass over the gallery), so it is exact either way.
        Against that exact search, a certified answer may order differently, or swap the ``k``-th
        item, only among items whose divergences are within the search's float32 rounding (see the
        module's note on ties).
        """
        p = _check_p(p)
        log_odds = self.log_odds(p)
        log_r, log_1mr = log_sigmoid(log_odds), log_sigmoid(-log_odds)
        scores = mixture_scores(log_r, log_1mr, self._a, self._b, self._alpha, self._beta)
        if scores.shape[0] >= self.k:
            top = np.argpartition(-scores, self.k - 1)[:self.k]
            top = top[np.argsort(-scores[top], kind="stable")]
            kth = scores[top[-1]]
            bound = self.bound(log_odds)
            if kth >= bound + CERTIFICATE_RTOL * (1.0 + abs(bound)) or np.isneginf(bound):
                r = np.exp(log_r)
                offset = r * self._self_scores[0] + (1.0 - r) * self._self_scores[1]   # c(r)
                return self._output(offset - scores[top], self.candidate_ids[top]) + (True,)
        return self._exact(p) + (False,)

    def path(self, p: int | ArrayLike = DEFAULT_PATH_STEPS) -> SliderPath:
        """The exact top-``k`` at every position of a slider: :meth:`at` for each ``p`` at once.

        For ``S`` positions ``p_s`` with log-odds ``lambda_s`` and responsibilities ``r_s =
        sigmoid(lambda_s)``, the candidates' scores ``f_y(r_s)`` (module docstring) are evaluated
        as one ``(S, C)`` array, each row's top ``k`` taken, and each step certified against the
        chord of the grid thresholds at ``lambda_s`` (:meth:`bound`); a step that is not certified
        comes from the exact search at its ``p`` (one pass over the gallery), so every step is
        exact. Cost: ``O(S C)`` beyond the slider's one pass, plus one search per uncertified step.

        Parameters
        ----------
        p : int or array-like
            The number ``S`` of evenly spaced positions from 0 to 1 (default 101: steps of 0.01),
            or the positions themselves, weights in ``[0, 1]``.

        Returns
        -------
        SliderPath
            ``p (S,)``, ``values (S, k)`` ascending per row, ``ids (S, k)``, ``certified (S,)``,
            numpy on the CPU (the candidates' terms live there already; the fallback's results
            cross once per step).
        """
        positions = path_positions(p)
        log_r, top, best, certified = self._candidate_tops(positions)
        steps, k = len(positions), self.k
        values = np.empty((steps, k), dtype=torch.empty((), dtype=self._dtype).numpy().dtype)
        ids = np.empty((steps, k), dtype=np.int64)
        if top is not None:
            r = np.exp(log_r)
            offsets = r * self._self_scores[0] + (1.0 - r) * self._self_scores[1]           # c(r), (S, 1)
            values[certified] = (offsets - best)[certified]
            ids[certified] = self.candidate_ids[top[certified]]
        for step in np.flatnonzero(~certified):
            exact_values, exact_ids = self._exact(float(positions[step]))
            values[step], ids[step] = _numpy(exact_values), _numpy(exact_ids)
        return SliderPath(positions, values, ids, certified)

    def certified_along(self, p: int | ArrayLike = DEFAULT_PATH_STEPS) -> np.ndarray:
        """``(S,)`` whether the certificate covers each position of :meth:`path` (``p`` as there):
        ``O(S C)``, no search. Each position it does not cover costs :meth:`path` one exact search,
        so a caller may first choose a finer grid (one pass) where several are not covered."""
        return self._candidate_tops(path_positions(p))[3]

    def _candidate_tops(self, positions: np.ndarray) -> tuple[np.ndarray, Any, Any, np.ndarray]:
        """At each position: ``log r (S, 1)``, the candidates' top-``k`` as indices into them ``(S, k)``
        and their scores ``f`` ``(S, k)`` (both ``None`` with fewer than ``k`` candidates), and
        whether the certificate holds ``(S,)``. The last positions' are kept: :func:`query_path`
        asks for them twice (:meth:`certified_along`, then :meth:`path`)."""
        key = positions.tobytes()
        if self._last_tops is None or self._last_tops[0] != key:
            self._last_tops = (key, self._candidate_tops_at(positions))
        return self._last_tops[1]

    def _candidate_tops_at(self, positions: np.ndarray) -> tuple[np.ndarray, Any, Any, np.ndarray]:
        log_odds = self._log_odds_of(self.model.log_weights_along(positions))
        log_r, log_1mr = log_sigmoid(log_odds)[:, None], log_sigmoid(-log_odds)[:, None]
        scores = mixture_scores(log_r, log_1mr, self._a[None], self._b[None], self._alpha[None], self._beta[None])
        k = self.k
        if scores.shape[1] < k:
            return log_r, None, None, np.zeros(len(positions), dtype=bool)
        # torch's top-k: several times numpy's argpartition and argsort along rows of this size.
        best, top = (part.numpy() for part in torch.topk(torch.from_numpy(scores), k, dim=1))  # (S, k) each
        bounds = self._bounds(log_odds)
        with np.errstate(invalid="ignore"):  # the slack of an infinite bound is NaN; isneginf decides there
            certified = (best[:, -1] >= bounds + CERTIFICATE_RTOL * (1.0 + np.abs(bounds))) | np.isneginf(bounds)
        return log_r, top, best, certified

    def _exact(self, p: float) -> tuple[Any, Any]:
        """The fallback: the index's exact search at ``p`` for this query."""
        index = self._index.with_model(self.model.with_weights([p, 1.0 - p]))
        exclude = None if self.exclude is None else [self.exclude]
        query = (self._query.reshape(1, -1) if isinstance(self._query, torch.Tensor)
                 else np.asarray(self._query).reshape(1, -1))
        values, ids = index.search(query, self.k, exclude=exclude)
        return values[0], ids[0]

    def _output(self, values: np.ndarray, ids: np.ndarray) -> tuple[Any, Any]:
        if self._like_tensor:
            return (torch.as_tensor(values, dtype=self._dtype, device=self._index.device),
                    torch.as_tensor(ids, dtype=torch.long, device=self._index.device))
        return values.astype(torch.empty((), dtype=self._dtype).numpy().dtype), ids.astype(np.int64)


# How query_path grids the pass, per device type. On a CPU the pass's cost is f at each grid point
# for the rows it cannot skip, so a coarse grid and candidates rescored at every position win. On a
# GPU, f at a hundred points costs less than the launches and transfers of a second pass or of an
# exact search: the path's own positions are the grid, and 2 k kept at each certify every position.
PATH_GRIDS = {"cpu": "coarse", "cuda": "positions"}


def query_path(index: Any, query: ArrayLike, k: int, exclude: Any, p: int | ArrayLike = DEFAULT_PATH_STEPS,
               grid: str | None = None) -> SliderPath:
    """A query's exact top-``k`` at every slider position (``p`` as :meth:`MixtureSlider.path`) through
    its certified slider on ``index`` (an index with a ``slider`` method: an ``AnchorIndex`` or a
    ``ShardedAnchorIndex`` over a two-component mixture).

    ``grid`` (default: :data:`PATH_GRIDS` for the index's device): ``"coarse"``, the slider on
    :data:`PATH_GRID` points, and where that leaves more than one position uncovered on the default
    grid instead (one more pass, against one exact search per uncovered position: a large store or
    a tight anchor set needs it); ``"positions"``, one pass with every position of the path a grid
    point and ``2 k`` kept at each."""
    grid = PATH_GRIDS.get(index.device.type, "coarse") if grid is None else grid
    if grid == "positions":
        return index.slider(query, k=k, exclude=exclude, grid=AtPositions(path_positions(p)),
                            candidates=2 * k).path(p)
    if grid != "coarse":
        raise ValueError(f"grid must be 'coarse' or 'positions'; got {grid!r}.")
    slider = index.slider(query, k=k, exclude=exclude, grid=PATH_GRID)
    if np.count_nonzero(~slider.certified_along(p)) > 1:
        slider = index.slider(query, k=k, exclude=exclude)
    return slider.path(p)


def _numpy(array: Any) -> np.ndarray:
    """A search result (numpy, or a tensor on any device) as numpy on the CPU."""
    return array.detach().cpu().numpy() if isinstance(array, torch.Tensor) else np.asarray(array)
