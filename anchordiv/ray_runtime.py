"""The one place anchordiv starts or joins a Ray instance (the ``engine="ray"`` paths of issue 15).

Ray is imported here lazily, so ``import anchordiv`` never pays for it. :func:`connect` is idempotent:
a process already connected (by a caller's own ``ray.init``, or an earlier :func:`connect`) keeps its
connection. With no address a small local instance is started on this machine; an address
(``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:10001"``) joins an existing cluster, whose nodes must
have the same anchordiv and torch installed (workers unpickle anchordiv's classes) and, for search,
see the store's folder at the same path (a shared file system).

``ray.init`` on an address where no cluster runs waits for it for many minutes. So
:func:`check_address` first tries a plain TCP connection to the address Ray would dial (at most
:data:`PROBE_SECONDS`), and an address that does not answer is a ``ValueError`` naming it.
"""
from __future__ import annotations

import logging
import os
import socket
from typing import Any
from urllib.parse import urlsplit

# A local instance for tests and one machine: its shared-memory object store is capped so that it
# never claims a third of the host's memory (Ray's default), and usage stats are never sent.
LOCAL_OBJECT_STORE_BYTES = 512 * 2**20
# How long the probe of a cluster's address waits for a TCP connection: a live head on a slow
# network answers well within it; a firewall that drops packets is refused after it.
PROBE_SECONDS = 5.0
RAY_CLIENT_PORT = 10001  # the port of a "ray://HOST" address without one
_FIX = ("start the cluster (ray start --head) or give the address of a running one (--address HOST:PORT on the "
        "command line, address= in Python)")


def import_ray() -> Any:
    """The ``ray`` module, or a ``ValueError`` that names the fix when it is not installed."""
    try:
        import ray
    except ImportError as error:  # requirements.txt installs it; a trimmed environment may not have it
        raise ValueError("engine='ray' needs Ray: pip install 'ray[data]' (requirements.txt pins it)") from error
    return ray


def connect(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Connect this process to Ray and return the ``ray`` module.

    ``address``: ``None`` starts a local instance with ``num_cpus`` CPUs (default: all of them),
    unless ``RAY_ADDRESS`` is set, which Ray then joins; anything else is passed to ``ray.init`` to
    join that cluster. A process already connected keeps its connection (``address`` and
    ``num_cpus`` are then ignored). A cluster that cannot be reached is a ``ValueError`` naming it,
    within :data:`PROBE_SECONDS` when nothing answers at its address (:func:`check_address`).
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
    check_address(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    options: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                               "configure_logging": True}
    if address is None and not os.environ.get("RAY_ADDRESS"):
        options.update(num_cpus=num_cpus, object_store_memory=LOCAL_OBJECT_STORE_BYTES)
    else:
        options["address"] = address
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = address or os.environ.get("RAY_ADDRESS")
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]  # Ray's may carry a traceback
        raise ValueError(f"cannot join the Ray cluster at {where!r}: {reason}; {_FIX}") from error
    _quiet_data_progress(ray)
    return ray


def check_address(address: str | None) -> None:
    """``ValueError`` naming the Ray cluster ``address`` (``None``: ``RAY_ADDRESS``, if set) and the
    fix when nothing accepts a TCP connection at the address Ray would dial, within
    :data:`PROBE_SECONDS`; nothing when there is no address (a local instance is started) or it answers.

    ``"HOST:PORT"`` and ``"auto"`` are resolved as ``ray.init`` resolves them (``"auto"``: the cluster
    of the last ``ray start`` on this machine; a local host name: this node's address), and
    ``"ray://HOST[:PORT]"`` is dialled as given. Starts nothing and sends no data.
    """
    given = address or os.environ.get("RAY_ADDRESS") or None
    if given is None or given == "local":
        return
    host, port = _dialled(given)
    try:
        socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
    except OSError as error:
        dialled = f"{host}:{port}"
        where = given if given.endswith(dialled) else f"{given} ({dialled})"
        raise ValueError(f"no Ray cluster answers at {where}: {error.strerror or error}; {_FIX}") from error


def _dialled(address: str) -> tuple[str, int]:
    """``(host, port)`` that ``ray.init(address)`` would connect to; ``ValueError`` when there is none."""
    if address.startswith("ray://"):
        try:
            parts = urlsplit(address)
            host, port = parts.hostname, parts.port or RAY_CLIENT_PORT
        except ValueError as error:  # a port that is not a number
            raise ValueError(f"the Ray address {address!r} is malformed ({error}); give ray://HOST:PORT") from error
        if not host:
            raise ValueError(f"the Ray address {address!r} names no host; give ray://HOST:PORT")
        return host, port
    # Ray's own resolution (RAY_ADDRESS, "auto", a local host name to this node's address), so that the
    # probe dials what ray.init dials; the pinned Ray (requirements.txt) has it here.
    from ray._private.services import canonicalize_bootstrap_address

    try:
        resolved = canonicalize_bootstrap_address(address)
    except (ConnectionError, ValueError) as error:
        raise ValueError(f"cannot find the Ray cluster {address!r}: {error}; {_FIX}") from error
    host, _, port = resolved.rpartition(":")
    return host.strip("[]"), int(port)


def _quiet_data_progress(ray: Any) -> None:
    """Ray Data's progress bars redraw the terminal many times a second; anchordiv reports progress itself."""
    from ray.data import DataContext

    context = DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
