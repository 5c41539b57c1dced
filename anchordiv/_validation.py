"""Input checks shared by the math core: each error names the problem and the fix.

Where scikit-learn has words for the same refusal (its ``check_array``: "Complex data not
supported", "0 sample(s)", "Expected 2D array", "Sparse data was passed"), the message holds them
too, so that its estimator checks and anyone who knows its errors recognise it; scikit-learn itself
is not imported here (see :mod:`anchordiv.models.estimator`).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

ArrayLike = Any  # numpy array, torch tensor, or nested sequence of numbers

_EMBEDDINGS = "embeddings: real numbers of shape (n, d)"
_FLOAT_ARRAY_FIX = "Pass a float array, e.g. np.asarray(rows, dtype=np.float32)."
_ENCODE_FIRST = "encode the texts with an encoder first (e.g. encoder.encode_texts(texts)) and pass the result"


class NotNumbers(TypeError, ValueError):
    """Items that are not numbers (``None``, a dict) in an array of objects: a ``ValueError`` like
    every refused input here, and a ``TypeError`` like NumPy's and scikit-learn's refusal of them."""


def as_numeric_tensor(values: ArrayLike, name: str, embeddings: bool = True) -> torch.Tensor:
    """``values`` as a real-valued tensor of any shape, refusing what is not a number with a
    ``ValueError`` that says what it is: text, ``None`` or other objects (:class:`NotNumbers`),
    ragged rows, sparse matrices, complex or boolean values. Integer and floating dtypes pass
    through unchanged (a tensor keeps its device); an array of objects that are all numbers is
    read as float64, as scikit-learn reads it. ``embeddings`` says whether ``values`` are
    embeddings, for the wording of the errors (text is then told to go through an encoder)."""
    must = f"{name} must be {_EMBEDDINGS if embeddings else 'real numbers'}"
    _refuse_sparse(values, name, must)
    if isinstance(values, torch.Tensor):
        _check_numeric_dtype(values.dtype.is_complex, values.dtype == torch.bool, must)
        return values
    text_fix = _ENCODE_FIRST if embeddings else "pass numbers"
    if isinstance(values, (str, bytes)) or _first_item_is_text(values):
        raise ValueError(f"{must}, not text; {text_fix}.")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:  # ragged rows (numpy >= 1.24) or unconvertible items
        raise ValueError(f"{must}; could not read it as one array ({error}). Give every row the same "
                         "length, and only numbers.") from error
    if array.dtype.kind in "USa":
        raise ValueError(f"{must}, not text; {text_fix}.")
    if array.dtype.kind == "O":
        array = _numbers_from_objects(array, must, text_fix)
    if array.dtype.kind not in "biufc":
        raise ValueError(f"{must}; got an array of dtype {array.dtype} (None, ragged rows or other objects). "
                         f"{_FLOAT_ARRAY_FIX}")
    _check_numeric_dtype(array.dtype.kind == "c", array.dtype.kind == "b", must)
    return torch.as_tensor(array)


def _refuse_sparse(values: Any, name: str, must: str) -> None:
    """Refuse a SciPy sparse matrix or array, or a sparse torch tensor: embeddings are dense, and
    ``np.asarray`` would wrap a sparse matrix in an array of one object rather than read it."""
    # A SciPy sparse matrix exists only once scipy.sparse is imported, so this never imports SciPy.
    scipy_sparse = sys.modules.get("scipy.sparse")
    if scipy_sparse is not None and scipy_sparse.issparse(values):
        densify = "toarray()"
    elif isinstance(values, torch.Tensor) and values.layout != torch.strided:
        densify = "to_dense()"
    else:
        return
    raise ValueError(f"{must}; sparse data was passed for {name}, but dense data is required. Use "
                     f"{name}.{densify} to convert it to a dense array.")


def _numbers_from_objects(array: np.ndarray, must: str, text_fix: str) -> np.ndarray:
    """An array of dtype object as float64 when every item is a real number (scikit-learn's checks
    pass numbers held as objects); text is told to go through an encoder, ``None`` (which NumPy would
    read as NaN) and any other item are refused with :class:`NotNumbers`."""
    items = array.ravel()
    if any(isinstance(item, (str, bytes)) for item in items):
        raise ValueError(f"{must}, not text; {text_fix}.")
    reason = "None" if any(item is None for item in items) else ""
    if not reason:
        try:
            return array.astype(np.float64)
        except (TypeError, ValueError) as error:
            reason = str(error)  # NumPy's words, e.g. "float() argument must be a string or a real number, not 'dict'"
    raise NotNumbers(f"{must}; got an array of dtype object holding items that are not numbers ({reason}). "
                     f"{_FLOAT_ARRAY_FIX}")


def _first_item_is_text(values: Any) -> bool:
    """Whether a list or tuple holds text (``["dog", "cat"]``), checked on its first item only."""
    return isinstance(values, (list, tuple)) and len(values) > 0 and isinstance(values[0], (str, bytes))


def _check_numeric_dtype(is_complex: bool, is_bool: bool, must: str) -> None:
    """Refuse complex and boolean dtypes; ``must`` opens the message ("x must be ...")."""
    if is_complex:
        raise ValueError(f"{must}; Complex data not supported: got complex values. Pass the real part (x.real) if "
                         "the imaginary part is 0.")
    if is_bool:
        raise ValueError(f"{must}; got booleans. Cast to float (x.astype(np.float32)) if 0/1 vectors are "
                         "really meant.")


def as_matrix(values: ArrayLike, name: str) -> torch.Tensor:
    """Return ``values`` as a finite, non-empty, 2-D floating tensor of shape ``(n, d)``.

    float64 input stays float64; every other real dtype becomes float32. The tensor keeps its
    device. Text, objects, ragged rows, complex and boolean values are refused (see
    :func:`as_numeric_tensor`).
    """
    tensor = as_numeric_tensor(values, name)
    if tensor.dtype != torch.float64:
        tensor = tensor.to(torch.float32)
    if tensor.ndim != 2:
        hint = (f": expected 2D array, got 1D array instead. Reshape your data: use {name}[None, :] for a single "
                "embedding" if tensor.ndim == 1 else "")
        raise ValueError(f"{name} must be 2-D of shape (n, d); got shape {tuple(tensor.shape)}{hint}.")
    if tensor.shape[0] == 0 or tensor.shape[1] == 0:
        missing, count = ("rows", "0 sample(s)") if tensor.shape[0] == 0 else ("columns", "0 feature(s)")
        raise ValueError(
            f"{name} is empty (no {missing}): found array with {count} (shape={tuple(tensor.shape)}) while a "
            "minimum of 1 is required; pass at least one row of dimension d >= 1."
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
    """``scale * x / ||x||`` for each row ``x``; a zero row has no direction and is refused.

    Rows whose norm overflows (float32 entries near 1e38), underflows (entries below about 1e-19
    in float32) or leaves ``scale / ||x||`` infinite are first divided by their largest absolute
    entry, so every non-zero finite row gets its direction; other rows take the one-pass
    ``x * (scale / ||x||)``.
    """
    norms = torch.linalg.vector_norm(matrix, dim=1, keepdim=True)
    factors = scale / norms
    safe = torch.isfinite(norms) & torch.isfinite(factors) & (norms >= math.sqrt(torch.finfo(matrix.dtype).tiny))
    unsafe = ~safe
    if not bool(unsafe.any()):
        return matrix * factors
    rows = unsafe.flatten().nonzero().flatten()
    result = matrix * torch.where(unsafe, torch.zeros_like(factors), factors)
    result[rows] = _rescaled_unit_rows(matrix[rows], rows, name, scale)
    return result


def _rescaled_unit_rows(rows: torch.Tensor, ids: torch.Tensor, name: str, scale: float) -> torch.Tensor:
    """``scale * x / ||x||`` for ``rows`` whose norm is out of range, via ``x / max|x|``; ``ids``
    are their positions, named when a row is all zero."""
    peaks = rows.abs().amax(dim=1, keepdim=True)
    zero_rows = ids[peaks.flatten() == 0]
    if len(zero_rows):
        raise ValueError(
            f"{name} has {len(zero_rows)} all-zero row(s) (first: {zero_rows[:5].tolist()}), "
            "which have no direction to normalise; drop them."
        )
    shrunk = rows / peaks
    return shrunk * (scale / torch.linalg.vector_norm(shrunk, dim=1, keepdim=True))


def check_dimension(matrix: torch.Tensor, expected: int, name: str, against: str = "the anchors",
                    estimator: str | None = None) -> None:
    """Refuse ``matrix`` ``(n, d)`` unless ``d == expected``, the dimension of ``against``; with the
    name of the fitted ``estimator`` that expects it, the message says so in scikit-learn's words too."""
    if matrix.shape[1] != expected:
        in_its_words = (f" ({name} has {matrix.shape[1]} features, but {estimator} is expecting {expected} features "
                        "as input)" if estimator else "")
        raise ValueError(
            f"{name} has dimension {matrix.shape[1]} but {against} have dimension {expected}; "
            f"embed images and anchor texts with the same model{in_its_words}."
        )


def check_scale(scale: float) -> float:
    """The logit scale as a float: finite and positive; text and booleans are refused.

    There is no fixed upper bound: how large a scale stays finite depends on the model and the
    dtype, so each model checks its outputs instead (:func:`check_finite_output`).
    """
    value = finite_number(scale)
    if value is None or value <= 0:
        raise ValueError(f"scale must be a finite positive number (the logit scale, e.g. 100 for OpenAI CLIP); "
                         f"got {scale!r}.")
    return value


def check_finite_output(values: torch.Tensor, what: str, scale: float) -> torch.Tensor:
    """``values`` unchanged when every entry is finite; otherwise a ``ValueError`` saying that
    ``what`` overflowed at this ``scale``, with the fixes (a smaller scale, or float64 input)."""
    if bool(torch.isfinite(values).all()):
        return values
    fix = "use a smaller scale (CLIP's is about 100)"
    if values.dtype != torch.float64:
        fix += f" or float64 input (this ran in {str(values.dtype).removeprefix('torch.')})"
    raise ValueError(f"{what} overflowed to NaN or infinity at scale={float(scale):g}; {fix}.")


def check_positive_int(value: Any, name: str, minimum: int = 1) -> int:
    """``value`` as an ``int >= minimum``: Python and numpy integers pass; booleans, floats
    (even whole ones) and text are refused (:class:`Interval` with ``integer``)."""
    return Interval(minimum, integer=True)(value, name)


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` when it is not one, so that each caller can say what
    the number is for: text and booleans are not numbers here, nor is a whole number too large for
    a float (``float`` raises ``OverflowError``) or a tensor of several values (``RuntimeError``)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def finite_non_negative(value: Any) -> float | None:
    """``value`` as a finite float ``>= 0``, or ``None`` when it is not one (:func:`finite_number`)."""
    number = finite_number(value)
    return number if number is not None and number >= 0 else None


def as_float_array(values: ArrayLike, name: str) -> np.ndarray:
    """``values`` as a float64 numpy array of the same shape; text, objects, complex and booleans
    are refused (see :func:`as_numeric_tensor`)."""
    return as_numeric_tensor(values, name, embeddings=False).detach().cpu().numpy().astype(np.float64)


def as_float_vector(values: ArrayLike, name: str) -> np.ndarray:
    """``values`` flattened to a float64 numpy vector, checked as in :func:`as_float_array`."""
    return as_float_array(values, name).reshape(-1)


def check_probability_vector(weights: ArrayLike, length: int, name: str, atol: float = 1e-6) -> np.ndarray:
    """Non-negative finite weights of the given length that sum to 1 (within ``atol``)."""
    array = as_float_vector(weights, name)
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


@dataclass(frozen=True)
class Interval:
    """A declared parameter check: a finite number in ``[low, high]`` (an end left out where
    ``open_low`` or ``open_high``), a Python or numpy integer where ``integer``, or one of the values
    in ``also`` (e.g. ``"auto"``); ``example`` shows a good value in the message.

    Called as ``constraint(value, name)``, it returns the value (a float, an int, or the ``also``
    value) or raises ``ValueError`` naming ``name``, the range and the example.
    """

    low: float = 0.0
    high: float = math.inf
    open_low: bool = False
    open_high: bool = False
    integer: bool = False
    example: str = ""
    also: tuple = ()

    def __call__(self, value: Any, name: str) -> Any:
        if _one_of(value, self.also):
            return value
        number = self._number(value)
        if number is None or not self._inside(number):
            hint = f" ({self.example})" if self.example else ""
            raise ValueError(f"{name} must be {self.describe()}{hint}; got {value!r}.")
        return number

    def _number(self, value: Any) -> float | int | None:
        if self.integer:
            return int(value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else None
        return finite_number(value)

    def _inside(self, number: float) -> bool:
        above = number > self.low if self.open_low else number >= self.low
        below = number < self.high if self.open_high else number <= self.high
        return above and below

    def describe(self) -> str:
        """``"an integer >= 0"``, ``"a number in (0, 1)"``, ``"a finite number > 0"``, ``… or 'auto'``."""
        kind = "an integer" if self.integer else "a finite number" if self.high == math.inf else "a number"
        # An integer's bound in full (1000000, not 1e+06).
        low, high = (str(int(bound)) if self.integer and math.isfinite(bound) else f"{bound:g}"
                     for bound in (self.low, self.high))
        if self.high == math.inf:
            text = f"{kind} {'>' if self.open_low else '>='} {low}"
        else:
            text = f"{kind} in {'(' if self.open_low else '['}{low}, {high}{')' if self.open_high else ']'}"
        return text + "".join(f" or {other!r}" for other in self.also)


def one_of(*values: Any) -> Callable[[Any, str], Any]:
    """A declared parameter check: ``value`` must be one of ``values`` (compared with their types)."""
    def check(value: Any, name: str) -> Any:
        if not _one_of(value, values):
            raise ValueError(f"{name} must be one of {', '.join(repr(allowed) for allowed in values)}; got {value!r}.")
        return value
    return check


def _one_of(value: Any, values: tuple) -> bool:
    """Whether ``value`` is one of ``values``, of the same type too (``True`` is not ``1``)."""
    return any(type(value) is type(allowed) and value == allowed for allowed in values)


def scale_parameter(value: Any, name: str) -> float:
    """:func:`check_scale` as a declared parameter check."""
    return check_scale(value)


def check_params(estimator: Any, constraints: dict[str, Callable[[Any, str], Any]]) -> dict[str, Any]:
    """Every parameter of ``estimator`` that ``constraints`` declares, checked (each check returns the
    value to use or raises ``ValueError`` naming the parameter), by name."""
    return {name: check(getattr(estimator, name), name) for name, check in constraints.items()}
