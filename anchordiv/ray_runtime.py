"""The one place anchordiv starts or joins a Ray instance (the ``engine="ray"`` paths of issue 15).

Ray is imported here lazily, so ``import anchordiv`` never pays for it. :func:`connect` is idempotent:
a process already connected (by a caller's own ``ray.init``, or an earlier :func:`connect`) keeps its
connection. With no address a small local instance is started on this machine; an address
(``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:10001"``) joins an existing cluster, whose nodes must
have the same anchordiv and torch installed (workers unpickle anchordiv's classes) and, for search,
see the store's folder at the same path (a shared file system).
"""
from __future__ import annotations

import logging
import os
from typing import Any

# A local instance for tests and one machine: its shared-memory object store is capped so that it
# never claims a third of the host's memory (Ray's default), and usage stats are never sent.
LOCAL_OBJECT_STORE_BYTES = 512 * 2**20


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
    ``num_cpus`` are then ignored). A cluster that cannot be reached is a ``ValueError`` naming it.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
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
        raise ValueError(f"cannot join the Ray cluster at {where!r}: {error}; start it (ray start --head) "
                         "or give its address (--address HOST:PORT)") from error
    _quiet_data_progress(ray)
    return ray


def _quiet_data_progress(ray: Any) -> None:
    """Ray Data's progress bars redraw the terminal many times a second; anchordiv reports progress itself."""
    from ray.data import DataContext

    context = DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
