"""What a geometry measures over a gallery, kept on disk (:class:`CalibrationCache`): its calibration
curve and each component's ``kappa`` of every row, so that a server started again fits a geometry
it has fitted before without measuring either again (over the built-in world, nearly all of a
fit's time: docs/benchmarks.md).

A curve is stored under a key made from everything it depends on: the gallery's key (its content),
the spec, each set's anchors, weights and prior (their bytes), and the calibration's settings; the
file is checked by :func:`anchordiv.cache.cached_array` (key and sha256), so a stale or damaged file
is measured again and replaced, never used.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ..cache import cached_array
from ..models import MixtureAnchors
from ..models.calibration import CalibrationCurve

CACHE_VERSION = "calibration-v1"


@dataclass(frozen=True)
class CalibrationCache:
    """Curves and ``kappa`` of the gallery named ``gallery_key`` (its content), kept as files in ``folder``."""

    folder: Path
    gallery_key: str

    def key(self, spec_text: str, anchor_sets: Sequence[torch.Tensor], weights: Sequence[Sequence[float] | None],
            prior: torch.Tensor | None) -> str:
        """A digest of what a geometry's calibration depends on besides its settings (``spec_text``:
        the spec as text; the sets' anchors ``(N, d)``, their weights or ``None``, the prior)."""
        digest = hashlib.sha256(f"{CACHE_VERSION}|{self.gallery_key}|{spec_text}".encode())
        for anchors, set_weights in zip(anchor_sets, weights):
            digest.update(np.ascontiguousarray(anchors.detach().cpu().numpy()).tobytes())
            digest.update(repr(None if set_weights is None else [float(w) for w in set_weights]).encode())
        if prior is not None:
            digest.update(np.ascontiguousarray(prior.detach().cpu().numpy()).tobytes())
        return digest.hexdigest()

    def gallery_kappa(self, key: str, measure: Callable[[], torch.Tensor]) -> torch.Tensor:
        """Each component's ``kappa`` of every gallery row ``(G, K)``: the file of ``key`` when one
        was kept, else ``measure()``'s, kept."""
        return torch.from_numpy(np.array(cached_array(self.folder / f"{key[:32]}-kappa.npy", f"{key}|kappa",
                                                      lambda: measure().cpu().numpy())))

    def calibrated(self, mixture: MixtureAnchors, reference: torch.Tensor, component_kappa: torch.Tensor,
                   key: str) -> MixtureAnchors:
        """``mixture.with_calibration(reference, component_kappa=...)``, its curve read from the file
        of ``key`` when one was kept, else measured and kept."""
        calibrated: list[MixtureAnchors] = []

        def measure() -> np.ndarray:
            calibrated.append(mixture.with_calibration(reference, component_kappa=component_kappa))
            curve = calibrated[0].calibration_
            return np.stack([curve.log_odds, curve.progress, curve.progress_a, curve.progress_b])

        settings = (f"{key}|k={mixture.calibration_k}|queries={mixture.calibration_queries}"
                    f"|seed={mixture.calibration_seed}|rows={len(reference)}")
        rows = cached_array(self.folder / f"{key[:32]}.npy", settings, measure)
        if calibrated:
            return calibrated[0]
        # k and the number of queries follow from the settings, which the key names.
        k, queries = mixture.calibration_k, min(mixture.calibration_queries, len(reference))
        curve = CalibrationCurve(*(np.array(row, dtype=np.float64) for row in rows), queries=queries, k=k)
        return mixture.with_calibration(reference, component_kappa=component_kappa, curve=curve)
