"""Small helpers that several test modules use (fixtures are in tests/conftest.py): the skips
without the built-in model, unit rows, an image's file bytes, the SVG namespace, a call given a
deadline and a tripwire."""
from __future__ import annotations

import io
import threading
from typing import Any, Callable

import numpy as np
import pytest
import torch
from PIL import Image

from anchordiv.builtin.weights import ASSETS_DIR, MANIFEST_NAME, WEIGHTS_NAME

_NO_WEIGHTS = not (ASSETS_DIR / WEIGHTS_NAME).is_file()
#: Skips, with the reason, where the built-in model's weights or its manifest are not there yet.
needs_builtin = pytest.mark.skipif(_NO_WEIGHTS or not (ASSETS_DIR / MANIFEST_NAME).is_file(),
                                   reason="the built-in model weights (assets/builtin-model.*) are not there yet")
#: The same where only the weights are needed.
needs_weights = pytest.mark.skipif(_NO_WEIGHTS, reason="the built-in model weights are not there yet")
#: The SVG namespace, as ElementTree spells it in a tag ("{...}image").
SVG = "{http://www.w3.org/2000/svg}"


def unit(rows):
    """``rows`` scaled to length 1: a tensor by torch (and stays one), anything else as a numpy array
    (its own dtype; a list of numbers becomes float64)."""
    if isinstance(rows, torch.Tensor):
        return torch.nn.functional.normalize(rows, dim=1)
    rows = np.asarray(rows)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def encoded(image: Image.Image, format: str = "PNG", **options) -> bytes:
    """The bytes of ``image`` saved as ``format`` (with PIL's save ``options``): what a file or an
    upload of it holds."""
    buffer = io.BytesIO()
    image.save(buffer, format=format, **options)
    return buffer.getvalue()


def within(seconds: float, call: Callable[[], Any], on_timeout: Callable[[], None] | None = None,
           why: str = "") -> tuple[Any, BaseException | None]:
    """``(what call() returned, what it raised)``, run in a daemon thread; fails the test, rather than
    hanging it, if ``call`` has not ended within ``seconds`` (after ``on_timeout()``, which may
    release it; else it keeps running in its thread). ``why`` says in the failure what may block."""
    outcome: dict[str, Any] = {"result": None, "error": None}

    def run():
        try:
            outcome["result"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the test, which checks its kind
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if on_timeout is not None:
            on_timeout()
        pytest.fail(f"still running after {seconds:g} s{f' ({why})' if why else ''}")
    return outcome["result"], outcome["error"]


def tripwire(what: str = "the work started before the bad input was refused") -> Callable[..., Any]:
    """A stand-in for a step that must not run (a model load, the work after the checks): calling it
    fails the test with ``what``."""
    def tripped(*args, **kwargs):
        raise AssertionError(what)

    return tripped
