"""Input checks shared by the math core: each error names the problem and the fix."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

ArrayLike = Any  # numpy array, torch tensor, or nested sequence of numbers


def as_matrix(values: ArrayLike, name: str) -> torch.Tensor:
    """Return ``values`` as a finite, non-empty, 2-D floating tensor of shape ``(n, d)``.

    float64 input stays float64; every other dtype becomes float32. The tensor keeps its device.
    """
    tensor = values if isinstance(values, torch.Tensor) else torch.as_tensor(np.asarray(values))
    if tensor.dtype != torch.float64:
        tensor = tensor.to(torch.float32)
    if tensor.ndim != 2:
        hint = f" Use {name}[None, :] for a single embedding." if tensor.ndim == 1 else ""
        raise ValueError(f"{name} must be 2-D of shape (n, d); got shape {tuple(tensor.shape)}.{hint}")
    if tensor.shape[0] == 0 or tensor.shape[1] == 0:
        raise ValueError(
            f"{name} is empty (shape {tuple(tensor.shape)}); pass at least one row of dimension d >= 1."
        )
    # A row sum is NaN or infinite whenever an entry is: one cheap pass, then the exact check.
    if not bool(torch.isfinite(tensor.sum(dim=1)).all()):
        bad_rows = (~torch.isfinite(tensor)).any(dim=1).nonzero().flatten()
        if len(bad_rows):
            raise ValueError(
                f"{name} has NaN or infinite values in {len(bad_rows)} row(s) (first: "
                f"{bad_rows[:5].tolist()}); remove or re-embed those rows."
            )
    return tensor


def unit_rows(matrix: torch.Tensor, name: str, scale: float = 1.0) -> torch.Tensor:
    """``scale * x / ||x||`` for each row ``x``; a zero row has no direction and is refused."""
    norms = torch.linalg.vector_norm(matrix, dim=1, keepdim=True)
    zero_rows = (norms.flatten() == 0).nonzero().flatten()
    if len(zero_rows):
        raise ValueError(
            f"{name} has {len(zero_rows)} all-zero row(s) (first: {zero_rows[:5].tolist()}), "
            "which have no direction to normalise; drop them."
        )
    return matrix * (scale / norms)


def check_dimension(matrix: torch.Tensor, expected: int, name: str) -> None:
    if matrix.shape[1] != expected:
        raise ValueError(
            f"{name} has dimension {matrix.shape[1]} but the anchors have dimension {expected}; "
            "embed images and anchor texts with the same model."
        )


def check_scale(scale: float) -> float:
    try:
        value = float(scale)
    except (TypeError, ValueError) as error:
        raise ValueError(f"scale must be a finite positive number; got {scale!r}.") from error
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"scale must be a finite positive number (the logit scale, e.g. 100 for OpenAI CLIP); got {scale!r}."
        )
    return value


def check_positive_int(value: Any, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def check_non_negative(value: Any, name: str, hint: str) -> float:
    """``value`` as a finite float ``>= 0``; ``hint`` says what the number is for."""
    try:
        number = float(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a finite number >= 0 ({hint}); got {value!r}.") from error
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        raise ValueError(f"{name} must be a finite number >= 0 ({hint}); got {value!r}.")
    return number


def check_probability_vector(weights: ArrayLike, length: int, name: str, atol: float = 1e-6) -> np.ndarray:
    """Non-negative finite weights of the given length that sum to 1 (within ``atol``)."""
    array = np.asarray(weights, dtype=np.float64).reshape(-1)
    if array.shape[0] != length:
        raise ValueError(f"{name} must have {length} entries, one per component; got {array.shape[0]}.")
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError(f"{name} must be finite and non-negative; got {array.tolist()}.")
    total = array.sum()
    if abs(total - 1.0) > atol:
        raise ValueError(
            f"{name} must sum to 1; got {array.tolist()} (sum {total:.6g}). Divide by the sum, "
            "or for two components pass [p, 1 - p]."
        )
    return array / total
