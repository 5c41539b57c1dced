"""Hugging Face hub files (:func:`hub_file`) through ``huggingface_hub.hf_hub_download`` into the hub cache.

Its lock keeps processes from fetching one file twice, and a connection lost mid-file is resumed with
a ``Range`` request. Before it, one ``HEAD`` without retries decides whether the hub is reachable at
all (within :data:`~anchordiv.encoders.transfers.CONNECT_TIMEOUT`), so that a machine without network
fails in seconds instead of huggingface_hub's minute of retries; after it, the transfer is given up
once it moves too little for too long (:func:`~anchordiv.encoders.transfers.watched`), whatever
huggingface_hub retries inside. Every file is verified against its
ETag (:func:`~anchordiv.encoders.downloads.verify_hub_file`), from the cache and after a download.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Iterator

from .downloads import GIT_SHA1_HEX, SHA256_HEX, DownloadProgress, Unreachable, verify_hub_file
from .transfers import CONNECT_TIMEOUT, SHARED, Meter, OversizedTransfer, bounded, check_size, watched


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
             progress: DownloadProgress | None = None, model: str = "") -> Path | None:
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
    return SHARED.run(key, lambda report: _download_hub_file(repo_id, filename, cache_dir, report, model), progress)


def _download_hub_file(repo_id: str, filename: str, cache_dir, report: DownloadProgress, model: str) -> Path | None:
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
        check_hub_metadata(metadata.etag, metadata.commit_hash, url)
        check_size(metadata.size, url)
        meter = Meter(filename, url, model, report, limit=metadata.size)
        meter.begin(0, metadata.size)
        try:
            path = Path(watched(meter, lambda: hf_hub_download(repo_id, filename, cache_dir=cache_dir,
                                                               etag_timeout=CONNECT_TIMEOUT,
                                                               tqdm_class=_hub_bar(meter))))
        except (RemoteEntryNotFoundError, RepositoryNotFoundError):
            return None  # gone between the two requests
        except OversizedTransfer:
            _discard_partial(repo_id, cache_dir, metadata.etag)  # else the next try would resume from it
            raise
        except (httpx2.HTTPError, OSError) as error:  # TimeoutError included: a stalled transfer
            raise Unreachable(url, error) from None
    meter.emit(force=True)
    verify_hub_file(path, filename)
    return path


def check_hub_metadata(etag: str | None, commit: str | None, url: str) -> None:
    """``ValueError`` unless the hub's answer names the file by a content hash (a sha256, or a git
    blob's sha1) and the revision by a commit id: huggingface_hub makes file names of both, and only
    a hash lets the file be verified once it is here."""
    if not (etag and (SHA256_HEX.fullmatch(etag) or GIT_SHA1_HEX.fullmatch(etag))):
        raise ValueError(f"{url} answered with the tag {str(etag)[:80]!r}, which is not a content hash, so the file "
                         "could not be verified; anchordiv downloads only files it can verify. Check the hub address "
                         "(HF_ENDPOINT), or fetch the file by hand from a source you trust")
    if not (commit and GIT_SHA1_HEX.fullmatch(commit)):
        raise ValueError(f"{url} answered with the revision {str(commit)[:80]!r}, which is not a commit id; check the "
                         "hub address (HF_ENDPOINT), or fetch the file by hand from a source you trust")


def _discard_partial(repo_id: str, cache_dir, etag: str | None) -> None:
    """Delete huggingface_hub's partial file of the blob ``etag`` of ``repo_id`` (a hash: checked before)."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    if etag:
        blobs = Path(cache_dir or constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type="model") / "blobs"
        with contextlib.suppress(OSError):
            (blobs / f"{etag}.incomplete").unlink()


def _status(error) -> str:
    response = getattr(error, "response", None)
    return str(getattr(response, "status_code", "")) or type(error).__name__


def _hub_bar(meter: Meter) -> type:
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
