"""What a download is and how it is reported: the errors a loader raises, :class:`DownloadStatus`
(what a progress bar shows), :class:`RemoteFile` (a file a model needs that is not on this machine)
and the checks that every downloaded or cached file passes.

The transfers themselves are :mod:`.hub_client` (Hugging Face hub files) and :mod:`.url_client`
(plain URLs), each bounded and shared between callers through :mod:`.transfers`.

Every file is verified: against the sha256 (or prefix) its source publishes, else the hub's ETag (for
files the hub stores in LFS, the ETag is the content's sha256; for small files, the git blob id). A
file that does not match is deleted and refused, after a download and when found in a cache.
"""
from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from anchordiv.cache import sha256_file

from .base import CheckpointNotFound

SHA256_HEX = re.compile(r"[0-9a-f]{64}")
GIT_SHA1_HEX = re.compile(r"[0-9a-f]{40}")


class ModelUnavailable(CheckpointNotFound):
    """A model's files are neither on this machine nor reachable (no network, hub down)."""


class Unreachable(OSError):
    """The server of ``url`` could not be reached within the bound (raised to the loader, which names every
    missing file in a :class:`ModelUnavailable`)."""

    def __init__(self, url: str, reason: BaseException | str):
        detail = " ".join(str(reason).split())[:160] or type(reason).__name__
        super().__init__(f"{url} could not be reached ({detail}); check the network and the address, and try again")
        self.url = url


@dataclass(frozen=True)
class DownloadStatus:
    """Where one file's download stands: what a progress bar shows.

    ``total_bytes`` is ``None`` while the server has not said; ``bytes_per_second`` and ``seconds_left``
    are ``None`` until a rate can be measured. ``model`` is the label of the model the file belongs to.
    """

    filename: str
    url: str
    done_bytes: int
    total_bytes: int | None
    bytes_per_second: float | None
    seconds_left: float | None
    model: str = ""

    @property
    def fraction(self) -> float:
        """Done share in [0, 1] (0 while the size is unknown)."""
        if not self.total_bytes:
            return 0.0
        return min(1.0, max(0.0, self.done_bytes / self.total_bytes))

    def text(self) -> str:
        """``"ViT-B-32 open_clip_model.safetensors: 12.3 MB of 605.1 MB · 8.1 MB/s · 1 min 10 s left"``."""
        name = f"{self.model} {self.filename}" if self.model else self.filename
        size = (f"{format_bytes(self.done_bytes)} of {format_bytes(self.total_bytes)}" if self.total_bytes
                else f"{format_bytes(self.done_bytes)} so far")
        parts = [f"{name}: {size}"]
        if self.bytes_per_second:
            parts.append(f"{format_bytes(self.bytes_per_second)}/s")
        if self.seconds_left is not None and self.total_bytes and self.done_bytes < self.total_bytes:
            parts.append(f"{format_duration(self.seconds_left)} left")
        return " · ".join(parts)


# Called with each new status of a download (a general ProgressCallback takes a fraction and a line).
DownloadProgress = Callable[[DownloadStatus], None]


@dataclass(frozen=True)
class RemoteFile:
    """A file a model needs that is not on this machine.

    ``url`` is where it comes from; ``folder`` is where to copy it so that anchordiv finds it offline;
    ``size_bytes`` where known (``size_is_estimate``: computed from the architecture, not announced);
    ``sha256`` the published digest or prefix where there is one; ``alternative`` another file name the
    source may hold instead (a ``.bin`` for a ``.safetensors``); ``optional``: needed only where the
    source holds it (a tokenizer's files vary from one repository to another).
    """

    filename: str
    url: str
    size_bytes: int | None
    sha256: str | None
    folder: Path
    alternative: str | None = None
    size_is_estimate: bool = False
    optional: bool = False

    def text(self) -> str:
        """``"open_clip_model.safetensors (or open_clip_pytorch_model.bin) from URL, ≈ 605.1 MB"``, with
        ``", sha256 3f1c0a5e9d2b…"`` (its start, for checking a copy by hand) where published."""
        name = f"{self.filename} (or {self.alternative})" if self.alternative else self.filename
        parts = [f"{name} from {self.url}"]
        if self.size_bytes:
            parts.append(f"{'≈ ' if self.size_is_estimate else ''}{format_bytes(self.size_bytes)}")
        if self.sha256:
            parts.append(f"sha256 {self.sha256[:12]}…")
        if self.optional:
            parts.append("where the repository has it")
        return ", ".join(parts)


def format_bytes(count: float | None) -> str:
    """``605132968`` -> ``"605.1 MB"`` (decimal units, as download pages use)."""
    if count is None:
        return "unknown size"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{int(count)} B"


def format_duration(seconds: float) -> str:
    """``70`` -> ``"1 min 10 s"``; ``7300`` -> ``"2 h 1 min"``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


# -- verification ----------------------------------------------------------------------------------------


def verify_file(path: Path, expected: str | None, what: str) -> str:
    """sha256 of ``path``; when ``expected`` (a sha256 or a prefix of one) does not match, the file is
    deleted and ``ValueError`` names it, both digests and the way out."""
    digest = sha256_file(path)
    if expected and not digest.startswith(expected.lower()):
        _delete(path)
        raise ValueError(f"{what} {path} has sha256 {digest}, but its source publishes {expected}: the file is "
                         "damaged or incomplete and was deleted; fetch it again")
    return digest


def verify_hub_file(path: Path, filename: str) -> str | None:
    """Check a hub-cache file against its blob name (the ETag: sha256 for LFS files, the git blob id
    for small ones); return its sha256 when the blob name is one, else ``None``. A mismatch deletes
    the blob and its snapshot link and raises ``ValueError``."""
    blob = path.resolve()
    etag = blob.name
    if SHA256_HEX.fullmatch(etag):
        digest = sha256_file(blob)
    elif GIT_SHA1_HEX.fullmatch(etag):
        digest = git_blob_sha1(blob)
        if digest != etag and plain_sha1(blob) == etag:  # a mirror that tags files with their plain sha1
            digest = etag
    else:
        return None
    if digest != etag:
        _delete(blob)
        _delete(path)
        raise ValueError(f"{filename} {path} has digest {digest}, but the hub publishes {etag} for it: the file is "
                         "damaged or incomplete and was deleted; fetch it again")
    return digest if len(digest) == 64 else None


def git_blob_sha1(path: Path) -> str:
    """The git blob id of a file: sha1 over ``blob <size>\\0`` and the bytes (the hub's ETag of a non-LFS file)."""
    return _sha1(path, f"blob {path.stat().st_size}\0".encode())


def plain_sha1(path: Path) -> str:
    """The sha1 of a file's bytes."""
    return _sha1(path, b"")


def _sha1(path: Path, header: bytes) -> str:
    digest = hashlib.sha1(header)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _delete(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
