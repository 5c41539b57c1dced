"""Embedding a folder of images into a gallery store on Ray: the Ray engine of
:func:`anchordiv.embeddings.embed_folder_to_store` (``anchordiv embed --engine ray``).

The driver fixes the same :class:`~anchordiv.embeddings.FolderStorePlan` as the local engine and
opens the same :class:`~anchordiv.store.StoreWriter`, so a store started by one engine is resumed
by the other. A Ray Dataset holds one row ``{shard, position, path}`` per file of the shards not
finished yet; ``map_batches`` sends it through a pool of :class:`FolderEmbedder` actors, each of
which loads the encoder once (on one GPU when the cluster has GPUs) and returns a vector or the
reason the file was skipped for every row. The driver streams the results, gathers each shard's
rows (they come in any order) and writes the shard as soon as it is complete, so a kill loses at
most the shards in flight. Ray is imported only when this engine runs.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ._validation import check_positive_int
from .embeddings import embed_files, plan_folder_store
from .encoders import load_encoder
from .progress import ProgressCallback
from .ray_runtime import check_address, connect
from .store import GalleryStore, StorePlan, StoreWriter

# A worker's exception comes back to the driver as text in its traceback, not as the exception.
_EXCEPTION_LINE = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception|NotFound): .+$", re.MULTILINE)


def embed_folder_to_store_ray(
    folder: str | os.PathLike,
    encoder_spec: str,
    out: str | os.PathLike,
    labels_csv: str | os.PathLike | None = None,
    shard_rows: int = 4096,
    batch_size: int = 64,
    dtype: str = "float16",
    progress: ProgressCallback | None = None,
    overwrite: bool = False,
    pretrained: str | os.PathLike | None = None,
    allow_download: bool = False,
    address: str | None = None,
    workers: int | None = None,
) -> GalleryStore:
    """Embed every image under ``folder`` with the encoder ``encoder_spec`` (and ``pretrained``, as
    :func:`~anchordiv.encoders.load_encoder` takes them) into a :class:`~anchordiv.store.GalleryStore`
    in the folder ``out`` on Ray, ``shard_rows`` files per shard; resumable.

    The store is the one :func:`~anchordiv.embeddings.embed_folder_to_store` writes (same plan,
    ids, skipped files and labels; vectors equal to float rounding), and either engine resumes
    the other's unfinished build: finished shards are kept, only the rest are embedded.
    ``address`` joins that Ray cluster (``None``: a local instance, see
    :func:`anchordiv.ray_runtime.connect`); its nodes must see ``folder`` and ``pretrained`` at
    the same paths. ``workers`` encoder actors run at once (default: one per GPU of the cluster,
    else one per CPU; never more than there are batches of ``batch_size`` files), each holding
    one copy of the encoder. The encoder is also loaded once in this process, on the CPU, to
    learn its name and dimension. ``progress(fraction, text)`` is told after each shard.
    Raises ``ValueError`` as the local engine does, for a worker's failure (naming it), and, before
    anything is loaded or written, for an ``address`` where no cluster answers.
    """
    check_positive_int(batch_size, "batch_size")
    if workers is not None:
        check_positive_int(workers, "workers")
    check_address(address)
    pretrained = _shared_path(pretrained)
    probe = load_encoder(encoder_spec, pretrained=pretrained, device="cpu", allow_download=allow_download)
    planned = plan_folder_store(folder, probe.name, probe.dim, labels_csv, shard_rows, dtype)
    del probe  # only its name and dimension are needed here; the workers load their own
    with StoreWriter(out, planned.plan, overwrite=overwrite, progress=progress) as writer:
        pending = writer.pending_shards()
        if pending:  # a finished store is reopened without starting Ray
            options = {"root": str(planned.root.resolve()), "spec": encoder_spec, "pretrained": pretrained,
                       "allow_download": allow_download}
            _run_pipeline(address, writer, pending, options, batch_size, workers)
        return writer.finish(planned.labels)


class FolderEmbedder:
    """The Ray Data actor: loads the encoder once, then embeds batches of ``{shard, position, path}`` rows.

    ``root`` is the image folder (absolute); ``spec``, ``pretrained`` and ``allow_download`` are
    :func:`~anchordiv.encoders.load_encoder`'s; ``device`` is where it runs (``"cuda"``: the GPU
    Ray gave this actor); ``batch_size`` images are encoded at once.
    """

    def __init__(self, root: str, spec: str, pretrained: str | None, allow_download: bool, device: str,
                 batch_size: int):
        self.root = Path(root)
        self.encoder = load_encoder(spec, pretrained=pretrained, device=device, allow_download=allow_download)
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The rows of ``batch`` (``n`` of them), each with ``vector`` (``(n, d)`` float32; zeros
        for a skipped file) and ``reason`` (``(n,)``: why the file was skipped, ``""`` if kept)."""
        # Paths travel as bytes: a name that is not UTF-8 (a surrogate escape) cannot be Arrow text.
        paths = [os.fsdecode(bytes(path)) for path in batch["path"]]
        kept_vectors, skipped = embed_files(self.root, paths, self.encoder, self.batch_size)
        reasons = np.full(len(paths), "", dtype=object)
        for index, reason in skipped:
            reasons[index] = reason
        vectors = np.zeros((len(paths), self.encoder.dim), dtype=np.float32)
        vectors[reasons == ""] = kept_vectors
        return {"shard": batch["shard"], "position": batch["position"], "vector": vectors, "reason": reasons}


class _ShardGatherer:
    """The streamed rows of the pending shards, in any order, until each shard is complete."""

    def __init__(self, plan: StorePlan, pending: list[int]):
        self._sizes = {number: len(plan.shard_keys(number)) for number in pending}
        self._dim = plan.dim
        self._vectors: dict[int, np.ndarray] = {}
        self._reasons: dict[int, np.ndarray] = {}
        self._seen: dict[int, np.ndarray] = {}

    def add(self, batch: dict[str, np.ndarray]) -> list[int]:
        """Take a batch of the actors' rows; return the shards it completed."""
        completed = []
        for number in np.unique(batch["shard"]).tolist():
            if number not in self._sizes:  # written already: these rows repeat a retried task's
                continue
            rows = batch["shard"] == number
            positions = batch["position"][rows]
            if number not in self._seen:
                size = self._sizes[number]
                self._vectors[number] = np.zeros((size, self._dim), dtype=np.float32)
                self._reasons[number] = np.full(size, "", dtype=object)
                self._seen[number] = np.zeros(size, dtype=bool)
            # Placed by position, so a row Ray computed twice (a retried task) is counted once.
            self._vectors[number][positions] = batch["vector"][rows]
            self._reasons[number][positions] = batch["reason"][rows]
            self._seen[number][positions] = True
            if self._seen[number].all():
                completed.append(number)
        return completed

    def take(self, number: int) -> tuple[np.ndarray, list[tuple[int, str]]]:
        """``(vectors (kept, d), skipped)`` of the complete shard ``number``, as ``StoreWriter.write_shard``
        takes them; its rows are then let go."""
        vectors, reasons = self._vectors.pop(number), self._reasons.pop(number)
        del self._seen[number], self._sizes[number]
        skipped = [(int(index), str(reasons[index])) for index in np.flatnonzero(reasons != "")]
        return vectors[reasons == ""], skipped


def _run_pipeline(address: str | None, writer: StoreWriter, pending: list[int], options: dict[str, Any],
                  batch_size: int, workers: int | None) -> None:
    """Embed the ``pending`` shards of ``writer``'s plan on Ray, writing each as soon as it is complete."""
    ray = connect(address)
    from ray.data import ActorPoolStrategy, from_items

    plan = writer.plan
    rows = [{"shard": number, "position": position, "path": os.fsencode(key)}
            for number in pending for position, key in enumerate(plan.shard_keys(number))]
    actors, gpus = _actor_pool(ray.cluster_resources(), workers, -(-len(rows) // batch_size))
    dataset = from_items(rows).map_batches(
        FolderEmbedder, batch_size=batch_size, batch_format="numpy", compute=ActorPoolStrategy(size=actors),
        num_gpus=gpus, num_cpus=1,
        fn_constructor_kwargs={**options, "device": "cuda" if gpus else "cpu", "batch_size": batch_size})
    gatherer = _ShardGatherer(plan, pending)
    try:
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            for number in gatherer.add(batch):
                writer.write_shard(number, *gatherer.take(number))
    except ray.exceptions.RayError as error:
        raise ValueError(f"a Ray worker failed: {_worker_failure(error)}; fix that and run the same command "
                         "again (the shards written so far are kept)") from error


def _actor_pool(resources: dict[str, float], workers: int | None, batches: int) -> tuple[int, int]:
    """``(actors, GPUs per actor)`` for a cluster with ``resources``: one GPU each when it has GPUs,
    else one CPU; ``workers`` actors (default: as many as fit), never more than ``batches``."""
    gpus = int(resources.get("GPU", 0))
    fit, unit = (gpus, "GPU") if gpus else (int(resources.get("CPU", 1)), "CPU")
    # A pool larger than the cluster would wait for resources that may never come.
    if workers is not None and workers > fit:
        raise ValueError(f"workers={workers} but the Ray cluster has {fit} {unit}(s) and each worker takes one; "
                         f"give at most {fit} workers, or add nodes")
    return max(1, min(workers or fit, batches)), 1 if gpus else 0


def _worker_failure(error: Exception) -> str:
    """The worker's own exception line (e.g. ``ValueError: ...``) from a Ray error, whose text
    carries the worker's traceback; else the Ray error's first line."""
    text = str(error)
    lines = _EXCEPTION_LINE.findall(text)
    return lines[0] if lines else text.strip().splitlines()[0]


def _shared_path(pretrained: str | os.PathLike | None) -> str | None:
    """``pretrained`` for the workers: a file that exists here as an absolute path (a worker's
    working folder is not this process's), anything else (an open_clip tag) as it is."""
    if pretrained is None:
        return None
    path = Path(pretrained).expanduser()
    return str(path.resolve()) if path.exists() else str(pretrained)
