"""Loading untrusted image files (gallery folders, uploads) into RGB PIL images, or saying why not.

Accepted: PNG, JPEG, WebP, GIF (first frame) and BMP. Limits, checked before any pixel is decoded:
at most :data:`MAX_BYTES` (25 MB) per file, :data:`MAX_PIXELS` (40 megapixels, e.g. 8000 x 5000) and
sides in a ratio of at most :data:`MAX_ASPECT`.
Every refusal is an :class:`ImageLoadError` whose message names the file, what was wrong and what is
accepted, fit to show to a user as is. 16-bit grayscale is scaled to 8 bits (not clipped to white).

Also the one place that decides which files may be read at all (:func:`file_problem`,
:func:`read_regular_file`): only regular files outside /proc, /sys and /dev, opened without
blocking and read up to a limit, so a named pipe, a device or a link loop can never hang a reader.
"""
from __future__ import annotations

import errno
import io
import os
import stat
import warnings

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

MAX_BYTES = 25_000_000
MAX_PIXELS = 40_000_000
#: Longest side over shortest side at most: a 1 x 1,000,000 strip is refused, a panorama is not.
MAX_ASPECT = 50
ACCEPTED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
ACCEPTED = "PNG, JPEG, WebP, GIF or BMP"
# Kernel and device trees: their "files" can block, never end, or expose the server's own secrets.
SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")
_ONLY_REGULAR = "only regular files are read"
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class FileRefused(ValueError):
    """A file that is not read. ``str()`` is ``"<name>: <reason>"``, meant for the user."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class ImageLoadError(FileRefused):
    """A file that is not an acceptable image. ``str()`` is ``"<name>: <reason>"``, meant for the user."""


def display_name(path: str | os.PathLike) -> str:
    """``path`` fit to print or show: bytes that are not UTF-8 (kept by Python as surrogate escapes,
    so the path still opens the file) become U+FFFD instead of crashing whatever encodes the text."""
    return os.fsencode(path).decode("utf-8", errors="replace")


def system_folder(path: str | os.PathLike) -> str | None:
    """The member of :data:`SYSTEM_FOLDERS` that ``path`` is or resolves (through links) into, else None."""
    resolved = os.path.realpath(path)
    return next((folder for folder in SYSTEM_FOLDERS
                 if resolved == folder or resolved.startswith(folder + "/")), None)


def file_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` is not a regular file that may be read (a sentence fit for users), or None if it is.

    Links are followed; a loop, a broken link, a pipe, socket, device or folder, and anything
    under /proc, /sys or /dev are refused. Nothing is opened, so this never blocks.
    """
    try:
        info = os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symbolic link loop (the link leads back to itself); remove or fix the link"
        if error.errno == errno.ENOENT:
            return ("a broken symbolic link (its target does not exist); remove it or restore the target"
                    if os.path.islink(path) else "no such file")
        return f"cannot be read ({error.strerror or error}); check its permissions"
    for is_kind, kind in _KINDS:
        if is_kind(info.st_mode):
            return f"{kind}, not a regular file; {_ONLY_REGULAR}"
    system = system_folder(path)
    if system is not None:
        return f"a system file under {system}, not user data; {_ONLY_REGULAR} outside {', '.join(SYSTEM_FOLDERS)}"
    return None


def read_regular_file(path: str | os.PathLike, name: str, limit: int, too_large: str,
                      error: type[FileRefused] = FileRefused) -> bytes:
    """The bytes of the regular file ``path``, or ``error(name, reason)`` if it is not one (see
    :func:`file_problem`) or holds more than ``limit`` bytes (``too_large`` says what to do then).

    Opened with O_NONBLOCK and checked again on the open descriptor, so a file swapped for a pipe
    after the check still cannot block; at most ``limit + 1`` bytes are ever read, because /proc-like
    files report size 0 and growing files report less than they hold.
    """
    problem = file_problem(path)
    if problem is not None:
        raise error(name, problem)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as failure:
        raise error(name, f"cannot read the file ({failure.strerror or failure})") from failure
    with open(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise error(name, f"not a regular file; {_ONLY_REGULAR}")
        if info.st_size > limit:
            raise error(name, _too_large(info.st_size, limit, too_large))
        try:
            data = handle.read(limit + 1)
        except OSError as failure:
            raise error(name, f"cannot read the file ({failure.strerror or failure})") from failure
    if len(data) > limit:
        raise error(name, _too_large(len(data), limit, too_large))
    return data


def _too_large(size: int, limit: int, advice: str) -> str:
    return f"the file is {size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit {advice}"


def load_image(source: str | os.PathLike | bytes, name: str | None = None) -> Image.Image:
    """The image in ``source`` (a file path or the file's bytes) as an RGB PIL image.

    EXIF orientation is applied; transparency is composited on white; animations give their
    first frame. ``name`` is how messages refer to the file (default: the path, or "upload").
    Raises :class:`ImageLoadError` for a missing, oversized, non-image, unsupported, corrupt or
    truncated file, for anything but a regular file (see :func:`file_problem`) and for one with
    more than :data:`MAX_PIXELS` pixels.
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
        raise ImageLoadError(label, f"the image data is damaged or cut off ({error}); save or download the image "
                                    "again") from error
    return to_rgb(image)


def _read_bounded(source: str | os.PathLike | bytes, label: str) -> bytes:
    """The file's bytes, refusing before reading anything larger than :data:`MAX_BYTES` or not a regular file."""
    advice = "for images; downscale or recompress it"
    if isinstance(source, (bytes, bytearray, memoryview)):
        if len(source) > MAX_BYTES:
            raise ImageLoadError(label, _too_large(len(source), MAX_BYTES, advice))
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        return read_regular_file(source, label, MAX_BYTES, advice, error=ImageLoadError)
    raise TypeError(f"load_image takes a path or bytes, not {type(source).__name__}")


def _check_pixels(size: tuple[int, int], label: str) -> None:
    width, height = size
    if width * height > MAX_PIXELS:
        raise ImageLoadError(
            label, f"{width} x {height} pixels ({width * height / 1e6:.0f} megapixels) is over the "
            f"{MAX_PIXELS / 1e6:.0f}-megapixel limit; downscale it first"
        )
    if max(width, height) > MAX_ASPECT * max(1, min(width, height)):
        # An encoder scales the short side up to its input size: a strip would become gigapixels.
        raise ImageLoadError(label, f"{width} x {height} pixels is a strip, over {MAX_ASPECT} times as long as it "
                                    "is wide; crop it first")


def to_rgb(image: Image.Image) -> Image.Image:
    """8-bit RGB; alpha or palette transparency is composited on white rather than dropped to black,
    and 16-bit (or 32-bit integer) grayscale is scaled down rather than clipped to white."""
    if image.mode.startswith("I"):
        image = _integer_to_l(image)
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def _integer_to_l(image: Image.Image) -> Image.Image:
    """Mode "I;16*" or "I" as "L": 0..65535 scaled to 0..255 (Pillow's own convert clips at 255,
    which turns nearly every 16-bit picture white). PNG, the only accepted format with such modes,
    stores at most 16 bits, so "I" is read on the same scale. A transparent key becomes white."""
    values = np.asarray(image).astype(np.float64)  # numpy reads big- and little-endian layouts alike
    scaled = np.clip(np.rint(values / 257.0), 0, 255).astype(np.uint8)
    key = image.info.get("transparency")
    if isinstance(key, int):
        scaled[values == key] = 255
    return Image.fromarray(scaled, "L")
