"""Downloads a person can watch and trust: progress reports, one transfer per file, resumed, verified.

Two transports, each with a bounded wait for a server that cannot be reached (:data:`CONNECT_TIMEOUT`):

* Hugging Face hub files (:func:`hub_file`) through ``huggingface_hub.hf_hub_download`` into the hub
  cache: its lock keeps processes from fetching one file twice, and a connection lost mid-file is
  resumed with a ``Range`` request. Before it, one ``HEAD`` without retries decides whether the hub is
  reachable at all, so that a machine without network fails in seconds instead of huggingface_hub's
  minute of retries.
* Plain URLs (:func:`url_file`, the way OpenAI's weights come): a small client that writes
  ``<name>.part``, resumes it with ``Range`` (also in a later process) and moves it into place only
  once complete and verified. A server that does not answer is given up at once (a ``.part`` or not);
  only a transfer broken off mid-file is tried again.

Every file is verified: against the sha256 (or prefix) its source publishes, else the hub's ETag (for
files the hub stores in LFS, the ETag is the content's sha256; for small files, the git blob id). A
file that does not match is deleted and refused, after a download and when found in a cache.

Within a process, callers asking for the same file at once share one transfer, and each of their
``progress`` callbacks receives the same :class:`DownloadStatus` reports.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.client
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Iterator, TypeVar

from anchordiv.cache import sha256_file

from .base import CheckpointNotFound

T = TypeVar("T")

#: Seconds to wait for a server's first answer; without network the refusal comes within this bound.
CONNECT_TIMEOUT = 8.0
#: Seconds a started transfer may stall before it counts as interrupted.
READ_TIMEOUT = 30.0
#: Largest file anchordiv downloads (the biggest open_clip checkpoints are about 10 GB).
MAX_DOWNLOAD_BYTES = 32 * 1024**3
_RETRIES = 3  # consecutive broken transfers without a new byte before a plain-URL download gives up
_REPORT_EVERY = 0.1  # seconds between progress reports
_SHA256 = re.compile(r"[0-9a-f]{64}")
_GIT_SHA1 = re.compile(r"[0-9a-f]{40}")


class ModelUnavailable(CheckpointNotFound):
    """A model's files are neither on this machine nor reachable (no network, hub down)."""


class Unreachable(OSError):
    """The server of ``url`` could not be reached within the bound (raised to the loader, which names every
    missing file in a :class:`ModelUnavailable`)."""

    def __init__(self, url: str, reason: BaseException | str):
        detail = " ".join(str(reason).split())[:160] or type(reason).__name__
        super().__init__(f"{url} could not be reached ({detail})")
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


ProgressCallback = Callable[[DownloadStatus], None]


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


class _Meter:
    """Counts one transfer's bytes and turns them into :class:`DownloadStatus` reports, a few a second."""

    def __init__(self, filename: str, url: str, model: str, report: ProgressCallback):
        self.filename, self.url, self.model, self._report = filename, url, model, report
        self.done, self.total = 0, None
        self._start_time, self._start_bytes, self._last = time.monotonic(), 0, 0.0

    def begin(self, done: int, total: int | None) -> None:
        """A (re)started transfer: ``done`` bytes already on disk, ``total`` announced."""
        self.done, self.total = done, total
        self._start_time, self._start_bytes = time.monotonic(), done
        self.emit(force=True)

    def add(self, count: int) -> None:
        self.done += count
        self.emit()

    def emit(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < _REPORT_EVERY:
            return
        self._last = now
        elapsed, moved = now - self._start_time, self.done - self._start_bytes
        rate = moved / elapsed if elapsed > 0.5 and moved > 0 else None
        left = (self.total - self.done) / rate if rate and self.total else None
        self._report(DownloadStatus(self.filename, self.url, self.done, self.total, rate, left, self.model))


class _Transfer:
    """One running transfer: its waiters' callbacks, its last report, its outcome."""

    def __init__(self):
        self.finished = threading.Event()
        self.listeners: list[ProgressCallback] = []
        self.last: DownloadStatus | None = None
        self.result = None
        self.error: BaseException | None = None

    def report(self, status: DownloadStatus) -> None:
        self.last = status
        for listener in list(self.listeners):
            try:
                listener(status)
            except Exception:  # one visitor's broken page must not stop everyone's download
                self.listeners.remove(listener)


class SharedTransfers:
    """``run(key, work, progress)``: ``work(report)`` once per key however many threads ask at once.

    Callers who arrive while it runs receive its last report at once, every later one, and its result;
    if it fails with an ``Exception`` they receive the same error. (Interrupted by a
    ``BaseException`` such as ``KeyboardInterrupt``, the next caller starts again.)
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._running: dict[Hashable, _Transfer] = {}

    def run(self, key: Hashable, work: Callable[[ProgressCallback], T], progress: ProgressCallback | None = None) -> T:
        with self._lock:
            transfer = self._running.get(key)
            owner = transfer is None
            if owner:
                transfer = self._running[key] = _Transfer()
            if progress is not None:
                transfer.listeners.append(progress)
            last = transfer.last
        if not owner:
            if last is not None and progress is not None:
                progress(last)
            transfer.finished.wait()
            if transfer.error is None:
                return transfer.result
            if isinstance(transfer.error, Exception):
                raise transfer.error
            return self.run(key, work, progress)
        try:
            transfer.result = work(transfer.report)
            return transfer.result
        except BaseException as error:
            transfer.error = error
            raise
        finally:
            with self._lock:
                self._running.pop(key)
            transfer.finished.set()


_SHARED = SharedTransfers()


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
    if _SHA256.fullmatch(etag):
        digest = sha256_file(blob)
    elif _GIT_SHA1.fullmatch(etag):
        digest = git_blob_sha1(blob)
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
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _delete(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


# -- Hugging Face hub ------------------------------------------------------------------------------------
def hub_url(repo_id: str, filename: str) -> str:
    """Where the hub serves ``filename`` of ``repo_id`` (``$HF_ENDPOINT`` respected)."""
    from huggingface_hub import hf_hub_url

    return hf_hub_url(repo_id, filename)


def cached_hub_file(repo_id: str, filename: str, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """``filename`` of ``repo_id`` in the hub cache (a disk lookup only), or ``None``."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
    return Path(found) if isinstance(found, str) else None  # else None or the "known not to exist" marker


def hub_file(repo_id: str, filename: str, *, cache_dir: str | os.PathLike | None = None,
             progress: ProgressCallback | None = None, model: str = "") -> Path | None:
    """``filename`` of ``repo_id``: from the hub cache, else downloaded into it (verified either way).

    Returns ``None`` when the repository has no such file. Raises :class:`Unreachable` when the hub
    does not answer within :data:`CONNECT_TIMEOUT`, ``ValueError`` for a missing or gated repository
    and for a file that fails verification.
    """
    cached = cached_hub_file(repo_id, filename, cache_dir)
    if cached is not None:
        verify_hub_file(cached, filename)
        return cached
    key = ("hub", str(cache_dir), repo_id, filename)
    return _SHARED.run(key, lambda report: _download_hub_file(repo_id, filename, cache_dir, report, model), progress)


def _download_hub_file(repo_id: str, filename: str, cache_dir, report: ProgressCallback, model: str) -> Path | None:
    import httpx2
    from huggingface_hub import get_hf_file_metadata, hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, RemoteEntryNotFoundError, RepositoryNotFoundError

    url = hub_url(repo_id, filename)
    with quiet_hub():
        try:
            # One HEAD, no retries: whether the hub answers at all, before huggingface_hub's own retry loop.
            metadata = bounded(CONNECT_TIMEOUT, lambda: get_hf_file_metadata(url, timeout=CONNECT_TIMEOUT))
        except RemoteEntryNotFoundError:
            return None
        except RepositoryNotFoundError as error:
            raise ValueError(f"the hub at {url.split(f'/{repo_id}/')[0]} has no repository {repo_id!r} that this "
                             f"machine may read ({_status(error)}); check the name, or log in with `hf auth login` "
                             "for a gated or private one") from None
        except HfHubHTTPError as error:
            raise Unreachable(url, f"HTTP {_status(error)}") from None
        except (httpx2.HTTPError, OSError) as error:
            raise Unreachable(url, error) from None
        _check_size(metadata.size, url)
        meter = _Meter(filename, url, model, report)
        meter.begin(0, metadata.size)
        try:
            path = Path(hf_hub_download(repo_id, filename, cache_dir=cache_dir, etag_timeout=CONNECT_TIMEOUT,
                                        tqdm_class=_hub_bar(meter)))
        except (RemoteEntryNotFoundError, RepositoryNotFoundError):
            return None  # gone between the two requests
        except (httpx2.HTTPError, OSError) as error:
            raise Unreachable(url, error) from None
    meter.emit(force=True)
    verify_hub_file(path, filename)
    return path


def _status(error) -> str:
    response = getattr(error, "response", None)
    return str(getattr(response, "status_code", "")) or type(error).__name__


def _hub_bar(meter: _Meter) -> type:
    """A tqdm class for ``hf_hub_download(tqdm_class=...)`` that draws nothing and feeds ``meter``."""
    from tqdm import tqdm

    class MeterBar(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True  # anchordiv draws its own bar from the reports
            super().__init__(*args, **kwargs)
            meter.begin(int(kwargs.get("initial") or 0), kwargs.get("total") or meter.total)

        def update(self, n=1):
            meter.add(int(n or 0))  # negative when the server ignored a Range request and the file restarts
            return super().update(n)

    return MeterBar


_quiet_lock = threading.Lock()
_quiet_users = 0
_quiet_saved_level = logging.NOTSET


@contextlib.contextmanager
def quiet_hub() -> Iterator[None]:
    """huggingface_hub's warnings (retries, resumes) kept off stderr while anchordiv reports the download
    itself: its logger at ERROR, restored when the last concurrent download ends."""
    global _quiet_users, _quiet_saved_level
    hub_logger = logging.getLogger("huggingface_hub")
    with _quiet_lock:
        if not _quiet_users:
            _quiet_saved_level = hub_logger.level
            hub_logger.setLevel(logging.ERROR)
        _quiet_users += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_users -= 1
            if not _quiet_users:
                hub_logger.setLevel(_quiet_saved_level)


def bounded(seconds: float, call: Callable[[], T]) -> T:
    """``call()`` in a helper thread, given up after ``seconds`` (:class:`TimeoutError`): a name lookup
    without network can block longer than any socket timeout."""
    outcome: dict[str, object] = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=target, daemon=True, name="anchordiv-connect")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def _check_size(size: int | None, url: str) -> None:
    if size is not None and size > MAX_DOWNLOAD_BYTES:
        raise ValueError(f"{url} announces {format_bytes(size)}, more than anchordiv downloads "
                         f"({format_bytes(MAX_DOWNLOAD_BYTES)}); fetch it by hand if it is what you want")


# -- plain URLs ------------------------------------------------------------------------------------------
def url_file(url: str, destination: Path, *, sha256: str | None = None, progress: ProgressCallback | None = None,
             model: str = "") -> Path:
    """The file at ``url`` saved as ``destination``, through ``<destination>.part`` (resumed with ``Range``
    after an interruption, also by a later process) and checked against ``sha256`` (a digest or prefix)
    before it is moved into place. Raises :class:`Unreachable` when the server cannot be reached or
    the transfer keeps failing, ``ValueError`` for an HTTP error or a file that fails verification."""
    key = ("url", str(destination))
    return _SHARED.run(key, lambda report: _download_url(url, destination, sha256, _Meter(
        destination.name, url, model, report)), progress)


def _download_url(url: str, destination: Path, sha256: str | None, meter: _Meter) -> Path:
    from filelock import FileLock

    destination.parent.mkdir(parents=True, exist_ok=True)
    part = destination.with_name(destination.name + ".part")
    with FileLock(str(destination) + ".lock"):  # another process may be fetching the same file
        if destination.is_file():
            verify_file(destination, sha256, "downloaded file")
            return destination
        failures = 0
        while True:
            before = part.stat().st_size if part.exists() else 0
            try:
                _fetch_into(url, part, meter)
                break
            except Unreachable:  # no answer at all: retrying would only multiply the wait
                raise
            except urllib.error.HTTPError as error:
                raise ValueError(f"{url} answered HTTP {error.code} ({error.reason}); check the address") from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as error:  # the body broke off
                now = part.stat().st_size if part.exists() else 0
                failures = 0 if now > before else failures + 1
                if failures >= _RETRIES:
                    raise Unreachable(url, getattr(error, "reason", error)) from None
        verify_file(part, sha256, "downloaded file")
        os.replace(part, destination)
    meter.emit(force=True)
    return destination


def _fetch_into(url: str, part: Path, meter: _Meter) -> None:
    """Append the rest of ``url`` to ``part`` (all of it when the server ignores ``Range``)."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": "anchordiv", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = bounded(CONNECT_TIMEOUT, lambda: urllib.request.urlopen(request, timeout=READ_TIMEOUT))
    except urllib.error.HTTPError as error:
        if error.code == 416 and have:  # nothing left to send: the part is whole (verification decides)
            return
        raise
    except (urllib.error.URLError, http.client.HTTPException, OSError) as error:  # TimeoutError included
        raise Unreachable(url, getattr(error, "reason", error)) from None
    with response:
        resumed = response.status == 206 and _range_start(response.headers.get("Content-Range")) == have
        length = response.headers.get("Content-Length")
        total = (have if resumed else 0) + int(length) if length and length.isdigit() else None
        _check_size(total, url)
        meter.begin(have if resumed else 0, total)
        with open(part, "ab" if resumed else "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
                meter.add(len(chunk))
                if total is not None and meter.done > total or meter.done > MAX_DOWNLOAD_BYTES:
                    raise ValueError(f"{url} sent more bytes than it announced; fetch it again")
    if total is not None and meter.done < total:
        raise http.client.IncompleteRead(b"", total - meter.done)


def _range_start(content_range: str | None) -> int | None:
    """``"bytes 100-199/200"`` -> ``100``."""
    match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", (content_range or "").strip())
    return int(match.group(1)) if match else None
