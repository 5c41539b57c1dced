"""Plain URLs (:func:`url_file`, the way OpenAI's weights come): a small client that writes
``<name>.part``, resumes it with ``Range`` (also in a later process) and moves it into place only once
complete and verified. A server that does not answer is given up at once (a ``.part`` or not), within
:data:`~anchordiv.encoders.transfers.CONNECT_TIMEOUT`; only a transfer broken off mid-file is tried again.
"""
from __future__ import annotations

import http.client
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

from .downloads import DownloadProgress, Unreachable, verify_file
from .transfers import CONNECT_TIMEOUT, SHARED, Meter, bounded, check_size, watched

#: Seconds a started transfer may stall before it counts as interrupted.
READ_TIMEOUT = 30.0
_RETRIES = 3  # consecutive broken transfers without a new byte before a plain-URL download gives up


def url_file(url: str, destination: Path, *, sha256: str | None = None, progress: DownloadProgress | None = None,
             model: str = "") -> Path:
    """The file at ``url`` saved as ``destination``, through ``<destination>.part`` (resumed with ``Range``
    after an interruption, also by a later process) and checked against ``sha256`` (a digest or prefix)
    before it is moved into place. Raises :class:`Unreachable` when the server cannot be reached, the
    transfer keeps failing or it crawls, ``ValueError`` for an HTTP error or a file that fails verification."""
    key = ("url", str(destination))
    return SHARED.run(key, lambda report: _watched_download(url, destination, sha256, Meter(
        destination.name, url, model, report)), progress)


def _watched_download(url: str, destination: Path, sha256: str | None, meter: Meter) -> Path:
    """:func:`_download_url` given up once it moves too little for too long (one deadline for the
    whole fetch, its retries included: :func:`~anchordiv.encoders.transfers.watched`)."""
    try:
        return watched(meter, lambda: _download_url(url, destination, sha256, meter))
    except TimeoutError as error:
        raise Unreachable(url, error) from None


def _download_url(url: str, destination: Path, sha256: str | None, meter: Meter) -> Path:
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


def _fetch_into(url: str, part: Path, meter: Meter) -> None:
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
        check_size(total, url)
        meter.limit = total  # the meter stops the transfer past what this answer announced
        meter.begin(have if resumed else 0, total)
        with open(part, "ab" if resumed else "wb") as out:
            while chunk := response.read1(1 << 16):  # what has come, so the meter sees a slow link move
                out.write(chunk)
                meter.add(len(chunk))
    if meter.done < total:
        raise http.client.IncompleteRead(b"", total - meter.done)


def _range_start(content_range: str | None) -> int | None:
    """``"bytes 100-199/200"`` -> ``100``."""
    match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", (content_range or "").strip())
    return int(match.group(1)) if match else None
