"""Loading untrusted image files (gallery folders, uploads) into RGB PIL images, or saying why not.

Accepted: PNG, JPEG, WebP, GIF (first frame) and BMP. Limits, checked before any pixel is decoded:
at most :data:`MAX_BYTES` (25 MB) per file and :data:`MAX_PIXELS` (40 megapixels, e.g. 8000 x 5000).
Every refusal is an :class:`ImageLoadError` whose message names the file, what was wrong and what is
accepted, fit to show to a user as is.
"""
from __future__ import annotations

import io
import os
import warnings
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

MAX_BYTES = 25_000_000
MAX_PIXELS = 40_000_000
ACCEPTED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
ACCEPTED = "PNG, JPEG, WebP, GIF or BMP"


class ImageLoadError(ValueError):
    """A file that is not an acceptable image. ``str()`` is ``"<name>: <reason>"``, meant for the user."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


def load_image(source: str | os.PathLike | bytes, name: str | None = None) -> Image.Image:
    """The image in ``source`` (a file path or the file's bytes) as an RGB PIL image.

    EXIF orientation is applied; transparency is composited on white; animations give their
    first frame. ``name`` is how messages refer to the file (default: the path, or "upload").
    Raises :class:`ImageLoadError` for a missing, oversized, non-image, unsupported, corrupt or
    truncated file and for one with more than :data:`MAX_PIXELS` pixels.
    """
    label = name or ("upload" if isinstance(source, (bytes, bytearray, memoryview)) else str(source))
    data = _read_bounded(source, label)
    try:
        # Pillow warns (and past twice its limit, raises) on decompression bombs; both are refusals here.
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=ACCEPTED_FORMATS)
            _check_pixels(image.size, label)  # from the header, before decoding
            image.load()
            image = ImageOps.exif_transpose(image)
    except ImageLoadError:
        raise
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as error:
        raise ImageLoadError(
            label, f"the image has too many pixels (over {MAX_PIXELS / 1e6:.0f} megapixels); downscale it first"
        ) from error
    except UnidentifiedImageError as error:
        raise ImageLoadError(label, f"not an image in an accepted format ({ACCEPTED})") from error
    except Exception as error:  # Pillow's decoders raise OSError, SyntaxError, ValueError, struct.error, ...
        raise ImageLoadError(label, f"the image data is damaged or cut off ({error})") from error
    return _to_rgb(image)


def _read_bounded(source: str | os.PathLike | bytes, label: str) -> bytes:
    """The file's bytes, refusing before reading anything larger than :data:`MAX_BYTES`."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        size = len(source)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise ImageLoadError(label, "no such file")
        size = path.stat().st_size
    else:
        raise TypeError(f"load_image takes a path or bytes, not {type(source).__name__}")
    if size > MAX_BYTES:
        raise ImageLoadError(
            label, f"the file is {size / 1e6:.1f} MB, over the {MAX_BYTES / 1e6:.0f} MB limit for images; "
            "downscale or recompress it"
        )
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    try:
        return path.read_bytes()
    except OSError as error:
        raise ImageLoadError(label, f"cannot read the file ({error.strerror or error})") from error


def _check_pixels(size: tuple[int, int], label: str) -> None:
    width, height = size
    if width * height > MAX_PIXELS:
        raise ImageLoadError(
            label, f"{width} x {height} pixels ({width * height / 1e6:.0f} megapixels) is over the "
            f"{MAX_PIXELS / 1e6:.0f}-megapixel limit; downscale it first"
        )


def _to_rgb(image: Image.Image) -> Image.Image:
    """RGB; any alpha or palette transparency is composited on white rather than dropped to black."""
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")
