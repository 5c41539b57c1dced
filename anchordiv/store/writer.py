"""Building a store shard by shard so that a killed build loses nothing: :class:`StoreWriter`, and
:func:`build_store`, its local engine.

A store made this way also holds ``plan.json`` (the fixed list of items and settings, written
first) and ``shard-NNNNN.json`` for each finished shard (its sha256 and the items it skipped and
why, written after the shard).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .._validation import ArrayLike, as_numeric_tensor
from ..cache import atomic_write, sha256_file
from ..images import display_name
from ..progress import ProgressCallback
from .folder import prepare_folder, remove_temporaries, save_array, unit_shard, write_closing_files
from .lock import WriterLock
from .manifest import MANIFEST, OVERWRITE, record_name, shard_name
from .plan import PLAN_FILE, BuildReport, StorePlan, read_json, read_plan
from .reader import GalleryStore

logger = logging.getLogger(__name__)

ShardEmbedder = Callable[[list[str]], tuple[ArrayLike, list[tuple[int, str]]]]


def build_store(directory: str | Path, plan: StorePlan, embed_shard: ShardEmbedder,
                labels: Callable[[list[str]], pd.DataFrame] | None = None, progress: ProgressCallback | None = None,
                overwrite: bool = False) -> GalleryStore:
    """Build (or resume building) the store of ``plan`` in ``directory``, one shard at a time, and open it.

    This is the local engine: shards are embedded in order in this process. Finished shards of an
    earlier run of the same plan are verified (sha256) and kept; damaged ones are named (in
    ``progress``, the log at INFO and ``store.build_report.rebuilt``) and embedded again.

    Parameters
    ----------
    directory : str or Path
        The store's folder.
    plan : StorePlan
        What the store holds.
    embed_shard : callable
        ``embed_shard(keys) -> (vectors, skipped)`` for the keys of one shard: ``vectors``
        ``(n, d)`` for the items it kept, in order, and ``skipped`` ``(index in keys, reason)``
        for the others.
    labels : callable, optional
        ``labels(kept keys)`` gives the labels DataFrame (one row per kept item), or ``None``.
    progress : callable, optional
        ``progress(fraction, text)``, told after each shard.
    overwrite : bool
        Whether a folder holding another plan's store, or anything else, may be replaced.

    Returns
    -------
    GalleryStore
        The finished store, with its :class:`BuildReport` as ``build_report``.
    """
    with StoreWriter(directory, plan, overwrite=overwrite, progress=progress) as writer:
        for number in writer.pending_shards():
            writer.write_shard(number, *embed_shard(plan.shard_keys(number)))
        return writer.finish(labels)


class StoreWriter:
    """Writes the store of a :class:`StorePlan` shard by shard, so that a killed build loses nothing.

    Order of writes: ``plan.json`` first; then for each shard its ``.npy`` and, after it, its
    record ``shard-NNNNN.json`` (the plan's key, the rows, the sha256, the skipped items); the
    ids, labels and manifest last, once every shard has a record. Each write is atomic, so a kill
    leaves finished shards (with records) and at most one shard without a record, which is redone.
    A new writer on the same folder and plan verifies every recorded shard (sha256): good ones are
    kept, damaged or missing ones are listed in ``damaged`` and pending again (a finished store's
    manifest is removed first, so it never vouches for a shard being rebuilt). A folder holding
    another plan's store or build, or anything else, is refused unless ``overwrite=True``.

    Shards are independent files, so several workers may call :meth:`write_shard` for different
    shards at once (a distributed engine); :meth:`finish` runs once, after all of them. Whatever
    the engine, each damaged shard found (logged at INFO) and each shard this writer writes
    (DEBUG) is told to ``progress(fraction, text)``, and the store :meth:`finish` opens carries
    the :class:`BuildReport`.

    A writer holds the folder's lock (``writer.lock``) from its creation until :meth:`finish` or
    :meth:`close` (use it as a context manager): a second writer on the folder, in this process or
    another, is refused at once with the holder's pid and changes nothing.
    """

    def __init__(self, directory: str | Path, plan: StorePlan, overwrite: bool = False,
                 progress: ProgressCallback | None = None):
        self.directory = Path(directory).expanduser()
        self.plan = plan
        self.damaged: list[str] = []
        self._key = plan.key
        self._progress = progress
        self._pending: list[int] | None = None  # what pending_shards found: the build's report
        self._done = 0
        self._lock = WriterLock(self.directory)
        try:
            self._start(overwrite)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Let the folder's lock go (the store stays as it is: finished, or resumable by a later writer)."""
        self._lock.release()

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _say(self, fraction: float, text: str, level: int = logging.DEBUG) -> None:
        """Tell ``progress`` and the log: a finished shard is progress (DEBUG: the caller's bar shows
        it), a damaged one an event (INFO)."""
        logger.log(level, text)
        if self._progress is not None:
            self._progress(fraction, text)

    def _start(self, overwrite: bool) -> None:
        """Resume this plan's build, or clear the folder (as allowed) and write the plan."""
        try:
            existing = read_plan(self.directory)
        except ValueError:
            if not overwrite:
                raise
            existing = None  # a damaged plan is replaced like any other
        if existing is not None and existing.key == self._key:
            remove_temporaries(self.directory)  # a killed run's half-written files; nothing reads them
            return
        if existing is not None and not overwrite:
            raise ValueError(f"{self.directory} holds the store (or an unfinished build) of another plan "
                             f"({self.plan.difference(existing)}); {OVERWRITE} to replace it, or choose "
                             "another folder.")
        prepare_folder(self.directory, overwrite)
        atomic_write(self.directory / PLAN_FILE,
                     lambda handle: handle.write(json.dumps(self.plan.to_json()).encode()))

    def pending_shards(self) -> list[int]:
        """The shards without a good record, in order; damaged ones are added to ``damaged``."""
        pending = []
        for number in range(self.plan.n_shards):
            problem = self._record_problem(number)
            if problem is not None:
                pending.append(number)
                if problem:
                    self.damaged.append(problem)
        if pending:
            (self.directory / MANIFEST).unlink(missing_ok=True)
        for name in self.damaged:
            self._say(0.0, f"{name} is damaged or does not match its record; embedding it again", logging.INFO)
        self._pending, self._done = pending, self.plan.n_shards - len(pending)
        return pending

    def write_shard(self, number: int, vectors: ArrayLike, skipped: Sequence[tuple[int, str]]) -> None:
        """Write shard ``number``.

        Parameters
        ----------
        number : int
            The shard, ``0 .. plan.n_shards - 1``.
        vectors : array-like, shape (kept, d)
            The rows of its kept items, in order (unit-normalised here).
        skipped : sequence of (int, str)
            ``(index in the shard, reason)`` for the others.
        """
        size = len(self.plan.shard_keys(number))
        skipped = sorted((int(index), str(reason)) for index, reason in skipped)
        indices = [index for index, _ in skipped]
        if len(set(indices)) != len(indices) or any(not 0 <= index < size for index in indices):
            raise ValueError(f"{shard_name(number)}: skipped indices must be distinct and in 0..{size - 1}; "
                             f"got {indices}.")
        rows = size - len(skipped)
        path = self.directory / shard_name(number)
        if rows:
            digest = save_array(path, self._checked_rows(number, vectors, rows))
        else:  # every item was skipped: no shard file, and the manifest leaves the shard out
            path.unlink(missing_ok=True)
            digest = None
        record = {"plan": self._key, "shard": number, "rows": rows, "sha256": digest,
                  "skipped": [list(entry) for entry in skipped]}
        atomic_write(_record_path(self.directory, number), lambda handle: handle.write(json.dumps(record).encode()))
        self._done += 1
        self._say(self._done / self.plan.n_shards,
                  f"shard {number + 1} of {self.plan.n_shards} written ({shard_name(number)})")

    def finish(self, labels: Callable[[list[str]], pd.DataFrame] | None = None) -> GalleryStore:
        """Write the ids, labels and manifest once every shard has a good record, let the folder's lock
        go, and open the store (with its ``build_report`` when :meth:`pending_shards` ran).

        ``labels(kept keys)`` gives the labels DataFrame (one row per kept item), or ``None``."""
        records = [read_json(_record_path(self.directory, number)) for number in range(self.plan.n_shards)]
        missing = [shard_name(number) for number, record in enumerate(records)
                   if record is None or record.get("plan") != self._key]
        if missing:
            raise ValueError(f"{self.directory}: {', '.join(missing[:3])} not finished yet; write every shard "
                             "before finish (or rerun the build to finish it).")
        shards, kept, skipped, start = [], [], list(self.plan.skipped), 0
        for number, record in enumerate(records):
            keys = self.plan.shard_keys(number)
            reasons = {index: reason for index, reason in record["skipped"]}
            skipped += [(display_name(keys[index]), reason) for index, reason in sorted(reasons.items())]
            kept += [key for index, key in enumerate(keys) if index not in reasons]
            if record["rows"]:
                shards.append({"file": shard_name(number), "rows": record["rows"], "start": start,
                               "sha256": record["sha256"]})
                start += record["rows"]
        if not kept:
            raise ValueError(f"none of the plan's {len(self.plan.items)} items could be embedded (first: "
                             f"{skipped[0][0]!r}: {skipped[0][1]}); the store would be empty.")
        frame = labels(kept) if labels is not None else None
        if frame is not None and (not isinstance(frame, pd.DataFrame) or len(frame) != len(kept)):
            raise ValueError(f"labels must give a DataFrame of {len(kept)} rows (one per kept item); got "
                             f"{type(frame).__name__}.")
        write_closing_files(self.directory, np.arange(len(kept), dtype=np.int64), frame, dim=self.plan.dim,
                            dtype=self.plan.dtype, encoder=self.plan.encoder, shards=shards, plan=self._key,
                            skipped=[list(entry) for entry in sorted(skipped)], source=self.plan.source)
        self.close()
        store = GalleryStore.open(self.directory)
        if self._pending is not None:
            store.build_report = BuildReport(embedded=list(self._pending),
                                             reused=self.plan.n_shards - len(self._pending), rebuilt=list(self.damaged))
        return store

    def _record_problem(self, number: int) -> str | None:
        """``None`` when shard ``number`` is finished and intact; ``""`` when it was never finished;
        otherwise the name of the file that is damaged or missing (the shard is redone either way)."""
        record_path = _record_path(self.directory, number)
        if not record_path.exists():
            return ""
        record = read_json(record_path)
        if record is None or record.get("plan") != self._key or record.get("shard") != number:
            return record_path.name
        path = self.directory / shard_name(number)
        if record.get("rows") == 0:
            return None
        if path.is_symlink() or not path.is_file() or sha256_file(path) != record.get("sha256"):
            return path.name  # a link is redone too: the store's own file replaces it
        return None

    def _checked_rows(self, number: int, vectors: ArrayLike, rows: int) -> np.ndarray:
        """``vectors`` as ``(rows, dim)`` unit rows in the plan's dtype; ``ValueError`` naming the shard."""
        tensor = as_numeric_tensor(vectors, f"{shard_name(number)} vectors")
        if tuple(tensor.shape) != (rows, self.plan.dim):
            raise ValueError(f"{shard_name(number)}: got vectors of shape {tuple(tensor.shape)} for {rows} kept "
                             f"items of dimension {self.plan.dim}; return one row per item not skipped.")
        return unit_shard(tensor, 0, rows).numpy().astype(self.plan.dtype)


def _record_path(directory: Path, number: int) -> Path:
    return directory / record_name(number)
