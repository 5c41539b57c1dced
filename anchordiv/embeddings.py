"""Embedding a folder of images, with a cache that is reused only when it provably fits.

The cache for (encoder, folder) is ``<cache>/embeddings/<encoder>-<folder hash>.npy`` holding the
``(n, d)`` float32 vectors, plus ``<same>.npy.json`` written *after* it that records the cache key,
the shape, the sha256 of the ``.npy`` bytes and which file (by relative path and content sha256)
each row belongs to. The key covers the encoder name and every file's path and content hash, so
any edit, rename, addition or removal is noticed; vectors of unchanged content are then reused
and only new content is encoded. A ``.npy`` that its ``.json`` does not vouch for (killed run,
truncation, manual edits) is never read as vectors, nor is one holding NaN or infinite values.

A run that is killed keeps its work: each finished batch is written at once (atomically) to
``<same>.npy.partial/batch-*.npz`` as content hashes and vectors, and the next run reuses those
rows exactly like a stale cache's. The partial folder is removed once the full cache is written.
Runs that build the same cache take turns (a lock file in the partial folder), so the run holding
the lock may delete temporary files that a killed run left behind.

Only regular files are read: pipes, sockets, devices, link loops and broken links in the folder
are listed in ``skipped`` with the reason, and /proc, /sys and /dev are refused as folders.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import stat
import sys
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from glob import escape as glob_escape
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from anchordiv.cache import atomic_write, sha256_file
from anchordiv.cache import cache_dir as default_cache_dir
from anchordiv.encoders.base import Encoder
from anchordiv.images import (
    MAX_BYTES, FileRefused, ImageLoadError, display_name, file_problem, load_image, read_regular_file, system_folder,
)
from anchordiv.store import GalleryStore, StorePlan, build_store

try:  # POSIX only; without it concurrent runs on one cache are not serialised (and stray temp files stay)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

# Bump when the meaning of cached rows changes (e.g. the image loader's rules), to invalidate old caches.
# 2: 16-bit grayscale is scaled instead of clipped; caches record their format and are refused otherwise.
CACHE_FORMAT = 2
MAX_CSV_BYTES = 50_000_000
_BATCH_GLOB = "batch-*.npz"


@dataclass
class EmbeddedGallery:
    """Embeddings of the readable images in a folder, in sorted path order.

    ``embeddings`` is ``(n, d)`` float32, rows unit-norm; row ``i`` is ``paths[i]`` (relative to the
    folder, ``/``-separated) and ``labels.iloc[i]``. ``labels`` has at least ``path`` and ``label``.
    ``paths`` open the files (names that are not UTF-8 keep Python's surrogate escapes); show
    ``display_paths`` instead. ``skipped`` lists ``(display path, reason)`` for every file that is
    not in the gallery. ``reused`` counts rows taken from the cache (or from the finished batches of
    a killed run) rather than encoded in this call. ``unlabelled`` lists the paths that a labels
    CSV has no row for; they keep their folder as ``label``.
    """

    embeddings: torch.Tensor
    paths: list[str]
    labels: pd.DataFrame
    skipped: list[tuple[str, str]]
    encoder_name: str
    reused: int
    cache_path: Path
    unlabelled: list[str] = field(default_factory=list)

    @property
    def display_paths(self) -> list[str]:
        """``paths`` fit to show: bytes that are not UTF-8 become U+FFFD."""
        return [display_name(path) for path in self.paths]


def _open_folder(folder: str | os.PathLike, labels_csv: str | os.PathLike | None):
    """``(root, csv_path, labels table or None, files, unread)`` of an image folder to embed; a
    missing folder or a bad labels CSV fails here, before any image is encoded."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"image folder {display_name(folder)!r} does not exist or is not a folder")
    csv_path = Path(labels_csv).expanduser() if labels_csv is not None else None
    table = read_labels_table(csv_path) if csv_path is not None else None
    files, unread = scan_folder(root, exclude=csv_path)
    return root, csv_path, table, files, unread


def embed_folder(
    folder: str | os.PathLike,
    encoder: Encoder,
    labels_csv: str | os.PathLike | None = None,
    batch_size: int = 64,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> EmbeddedGallery:
    """Embed every image under ``folder`` (recursively) with ``encoder``, reusing the cache where valid.

    Every non-hidden regular file is a candidate; files that are not acceptable images (see
    :mod:`anchordiv.images`) and entries that are not regular files are reported in ``skipped``.
    Labels are the folder of each file relative to ``folder`` (``None`` for files at the top) unless
    ``labels_csv`` has a ``label`` column; that CSV is joined on a ``path`` column (relative to
    ``folder``) or, failing that, on a ``filename`` column (base names, which must then be unique).
    ``cache_dir`` defaults to ``<anchordiv cache>/embeddings`` (``$ANCHORDIV_CACHE`` or
    ``~/.cache/anchordiv``). Raises ``ValueError`` for a missing or system folder, an unreadable
    labels CSV (before any image is encoded) and an encoder that returns NaN or zero vectors.
    """
    root, csv_path, table, files, unread = _open_folder(folder, labels_csv)
    fingerprints = {rel: _fingerprint(root / rel) for rel in tqdm(
        files, desc="hashing", unit="file", file=sys.stderr, disable=not progress, leave=False)}
    key = _cache_key(encoder.name, fingerprints)
    data_path = _cache_path(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings",
                            encoder.name, root)

    cached, reused = _read_cache(data_path, encoder), None
    if not _fits(cached, key):
        with _build_lock(data_path) as partial:
            cached = _read_cache(data_path, encoder)  # another run may have written it while we waited
            if not _fits(cached, key):
                _remove_stray_temporaries(data_path, partial)
                cached, reused = _rebuild(root, files, fingerprints, key, cached, partial, data_path,
                                          encoder, batch_size, progress)
            _discard_partial(partial)
    meta, vectors = cached
    if reused is None:  # every row came from the cache
        reused = len(meta["rows"])
    paths = [row[0] for row in meta["rows"]]
    labels, unlabelled = _labels(paths, table, csv_path)
    return EmbeddedGallery(
        embeddings=torch.from_numpy(np.array(vectors, dtype=np.float32)),
        paths=paths,
        labels=labels,
        skipped=sorted(unread + [tuple(entry) for entry in meta["skipped"]]),
        encoder_name=encoder.name,
        reused=reused,
        cache_path=data_path,
        unlabelled=unlabelled,
    )


def export_npz(gallery: EmbeddedGallery, path: str | os.PathLike) -> Path:
    """Write ``embeddings`` (n, d), ``paths`` (n,), ``labels`` (n,) as strings and ``encoder_name`` to ``path``."""
    target = Path(path).expanduser()
    labels = ["" if pd.isna(value) else str(value) for value in gallery.labels["label"]]
    atomic_write(target, lambda handle: np.savez(
        handle, embeddings=gallery.embeddings.numpy(), paths=np.array(gallery.paths, dtype=str),
        labels=np.array(labels, dtype=str), encoder_name=np.array(gallery.encoder_name)))
    return target


def list_files(root: Path, exclude: Path | None) -> list[str]:
    """Relative ``/``-paths of the non-hidden regular files under ``root``, sorted (see :func:`scan_folder`)."""
    return scan_folder(root, exclude)[0]


def scan_folder(root: Path, exclude: Path | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """``(files, skipped)`` under ``root``: relative ``/``-paths of the non-hidden regular files
    (``exclude`` left out), sorted, and ``(display path, reason)`` for every other entry that is not
    read: pipes, sockets, devices, link loops, broken links, links to folders (not followed, as they
    can loop) and folders that cannot be listed. Hidden files and folders are left out silently.
    Nothing is opened. Raises ``ValueError`` if ``root`` is or resolves into /proc, /sys or /dev.
    """
    system = system_folder(root)
    if system is not None:
        raise ValueError(f"image folder {display_name(root)!r} is (or links into) {system}, a system folder, not a "
                         "folder of images; pass a folder that holds image files")
    excluded = _identity(exclude) if exclude is not None else None
    found: list[str] = []
    skipped: list[tuple[str, str]] = []

    def relative(path: str | os.PathLike) -> str:
        return display_name(Path(path).relative_to(root).as_posix())

    def unlistable(error: OSError) -> None:
        skipped.append((relative(error.filename), f"a folder that cannot be listed ({error.strerror}); "
                                                  "check its permissions"))

    for directory, subdirectories, names in os.walk(root, onerror=unlistable):
        base = Path(directory)
        followed = []
        for name in subdirectories:
            if name.startswith("."):
                continue
            if os.path.islink(base / name):
                skipped.append((relative(base / name), "a link to a folder; links to folders are not followed "
                                                       "(they can loop): move or copy the images in"))
            else:
                followed.append(name)
        subdirectories[:] = followed
        for name in names:
            path = base / name
            if name.startswith("."):
                continue
            problem = None if _is_plain_file(path) else file_problem(path)
            if problem is not None:
                skipped.append((relative(path), problem))
            elif excluded is None or _identity(path) != excluded:
                found.append(path.relative_to(root).as_posix())
    return sorted(found), sorted(skipped)


def read_csv_file(path: Path, name: str, **options) -> pd.DataFrame:
    """The comma-separated file at ``path``, checked strictly (:func:`_check_csv_structure`), then
    read by ``pandas.read_csv(..., **options)``; at most :data:`MAX_CSV_BYTES`.

    ``name`` is how messages refer to the file. An empty, binary or non-UTF-8 file, and one that
    pandas would read quietly wrong (a quote never closed or closed on a later line, a stray
    quote, a row with more or fewer cells than the header, a blank or repeated column name),
    raises ``ValueError`` that names the file, the line and the fix; so does anything
    :func:`~anchordiv.images.read_regular_file` refuses (pipes, devices, /proc, too large).
    """
    data = read_regular_file(path, name, MAX_CSV_BYTES, "for CSV files; split it or drop unused columns")
    if b"\0" in data:
        line = data[:data.index(b"\0")].count(b"\n") + 1
        raise ValueError(f"{name}: line {line} holds binary data (a NUL byte), so this is not a CSV text file; "
                         "export the table as CSV (UTF-8)")
    try:
        text = data.decode("utf-8-sig")  # Excel's "CSV UTF-8" starts with a byte order mark
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ValueError(f"{name}: line {line} is not UTF-8 text (byte 0x{data[error.start]:02x}); save the file "
                         "as UTF-8 (e.g. 'CSV UTF-8' in Excel, or iconv -f latin1 -t utf-8)") from None
    if not text.strip():
        raise ValueError(f"{name}: the file is empty; write a header row naming the columns, then one row per image")
    _check_csv_structure(text, name)
    try:
        return pd.read_csv(io.StringIO(text), **options)
    except pd.errors.ParserError as error:  # what the check above lets through and pandas still refuses
        detail = " ".join(str(error).split()).removeprefix("Error tokenizing data. C error: ")
        raise ValueError(f"{name}: cannot be read as CSV ({detail}); check the quoting and that every row has as "
                         "many cells as the header") from None


_QUOTE_FIX = 'close the quote on the line it opens, or double a quote that is part of the text ("")'


def _check_csv_structure(text: str, name: str) -> None:
    """Refuse what ``pandas.read_csv`` would read without a word but wrongly: a quote left open
    (the rest of the file becomes one cell), a quoted cell over several lines (labels and paths are
    one line each, so this is a quote closed too late), a stray or unbalanced quote, a row with
    more cells than the header (pandas would shift the columns) or fewer (it would fill in blanks),
    and a header with a blank or repeated column name. Blank lines are skipped, as pandas does.

    Raises ``ValueError`` naming ``name``, the line and the fix.
    """
    lines = list(io.StringIO(text, newline=""))  # split at \n, \r and \r\n only, as the csv module and pandas do
    reader = csv.reader(lines, strict=True)
    header: list[str] | None = None
    end = 0
    while True:
        start = end + 1
        try:
            cells = next(reader, None)
        except csv.Error as error:
            where = ("opens a quoted cell (\") that is never closed" if "end of data" in str(error)
                     else f"has a stray quote (\") inside a cell ({error})")
            raise ValueError(f"{name}: line {start} {where}; {_QUOTE_FIX}") from None
        if cells is None:
            return
        end = reader.line_num
        if end > start:
            raise ValueError(f"{name}: line {start} opens a quoted cell (\") that closes only on line {end}; "
                             f"{_QUOTE_FIX}")
        if not cells:
            continue
        if lines[start - 1].count('"') % 2:
            raise ValueError(f"{name}: line {start} has an unbalanced quote (\") inside a cell; put a cell that holds "
                             'a quote in quotes, the quote doubled ("12"" vinyl"), or close the quote it opens')
        if header is None:
            header = _check_header(cells, f"{name}: line {start}, the header,")
        elif len(cells) != len(header):
            raise ValueError(f"{name}: line {start} has {len(cells)} cell{'s' * (len(cells) != 1)} but the header "
                             f'has {len(header)}; quote cells that contain commas ("a, b"), and give every row one '
                             "cell per column")


def _check_header(cells: list[str], where: str) -> list[str]:
    """The header's column names, refusing a blank one (pandas would call it "Unnamed: N") and a
    repeated one (pandas would rename the second "label.1"); ``where`` starts the message."""
    names = [cell.strip() for cell in cells]
    if "" in names:
        raise ValueError(f"{where} has no name for column {names.index('') + 1}; name every column (e.g. "
                         "path,label,style) or remove the empty one")
    repeated = [column for column in dict.fromkeys(names) if names.count(column) > 1]
    if repeated:
        raise ValueError(f"{where} names column {repeated[0]!r} more than once; keep one column of each name")
    return names


def read_labels_table(csv_path: Path, name: str | None = None) -> pd.DataFrame:
    """The labels CSV at ``csv_path`` as :func:`embed_folder` joins it: read strictly
    (:func:`read_csv_file`), with its join column (``path``, normalised, or ``filename``) present,
    never blank and never repeated. ``name`` is how messages refer to the file (default
    ``"labels CSV <path>"``); each names the file, the line or data row, and the fix."""
    name = name or f"labels CSV {display_name(csv_path)}"
    if not os.path.lexists(csv_path):
        raise ValueError(f"{name!s} does not exist; check the path (or leave the CSV out to label by folder)")
    table = read_csv_file(csv_path, name, dtype={"path": str, "filename": str})
    if "path" in table.columns:
        on = "path"
    elif "filename" in table.columns:
        on = "filename"
    else:
        raise ValueError(
            f"{name}: needs a 'path' column (relative to the image folder) or a 'filename' column; its header "
            f"has {len(table.columns)} column(s), none of them named so"
        )
    blank = np.flatnonzero(table[on].isna().to_numpy())
    if len(blank):
        raise ValueError(f"{name}: data row {blank[0] + 1} has no {on}; fill it in or delete the row")
    if on == "path":
        table = table.assign(path=table["path"].map(_normalise_relative))
    repeated = np.flatnonzero(table[on].duplicated().to_numpy())
    if len(repeated):
        value = table[on].iloc[repeated[0]]
        first = int(np.flatnonzero((table[on] == value).to_numpy())[0])
        raise ValueError(f"{name}: {on} {value!r} appears in more than one row (data rows {first + 1} and "
                         f"{repeated[0] + 1}); keep one row per image")
    return table


def _labels(paths: list[str], table: pd.DataFrame | None, csv_path: Path | None) -> tuple[pd.DataFrame, list[str]]:
    """``(labels, unlabelled)``: one row per path with ``path`` (its display name: a name that is not
    UTF-8 can be neither matched by a CSV row nor stored as text), ``label`` (folder, or the CSV's) and
    the CSV's other columns; ``unlabelled`` are the paths the CSV has no row for (they keep their folder)."""
    shown = [display_name(rel) for rel in paths]
    folders = [rel.rpartition("/")[0] or None for rel in shown]
    frame = pd.DataFrame({"path": pd.Series(shown, dtype=object), "label": pd.Series(folders, dtype=object)})
    if table is None:
        return frame, []
    on = "path" if "path" in table.columns else "filename"
    if on == "filename":
        names = frame["path"].map(lambda rel: rel.rpartition("/")[2])
        duplicated = names[names.duplicated()]
        if len(duplicated):
            raise ValueError(
                f"labels CSV {display_name(csv_path)}: joins on 'filename', but {display_name(duplicated.iloc[0])!r} "
                "occurs in several folders; give the CSV a 'path' column with paths relative to the image folder"
            )
        frame = frame.assign(filename=names)
    if "label" in table.columns:
        frame = frame.drop(columns="label")
    joined = frame.merge(table, on=on, how="left", validate="one_to_one", indicator="_listed")
    listed = (joined.pop("_listed") == "both").to_numpy()
    if "label" in table.columns:
        # An image the CSV forgot keeps its folder label (and is reported), rather than silently losing it.
        joined["label"] = joined["label"].astype(object).where(listed, pd.Series(folders, dtype=object))
    columns = ["path", "label"] + [column for column in joined.columns if column not in ("path", "label")]
    return joined[columns], [path for path, found in zip(shown, listed) if not found]


def unlabelled_paths(paths: Sequence[str], labels_csv: str | os.PathLike) -> list[str]:
    """The ``paths`` (relative to the image folder, ``/``-separated, as a gallery or a store lists
    them) that the labels CSV has no row for: what :attr:`EmbeddedGallery.unlabelled` says of an
    :func:`embed_folder` result, for a store built by :func:`embed_folder_to_store` or on Ray.
    Reads and checks the CSV (``ValueError`` as :func:`embed_folder`)."""
    csv_path = Path(labels_csv).expanduser()
    return _labels(list(paths), read_labels_table(csv_path), csv_path)[1]


def _normalise_relative(path: str) -> str:
    """CSV paths as written by people: ``./a\\b.png`` and ``a/b.png`` both mean ``a/b.png``."""
    return Path(str(path).replace("\\", "/")).as_posix()


def _is_plain_file(path: Path) -> bool:
    """A regular file that is not a link: the common case, decided by one lstat and safe to read."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of what ``path`` leads to, so a link to the labels CSV is recognised as it."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _fingerprint(path: Path) -> str:
    """Content sha256; files too large to be images are not read (their size stands in)."""
    try:
        size = os.stat(path).st_size
    except OSError as error:
        return f"unreadable:{error.errno}"
    if size > MAX_BYTES:
        return f"size:{size}"
    try:
        return hashlib.sha256(read_regular_file(path, str(path), MAX_BYTES, "")).hexdigest()
    except FileRefused as refused:  # load_image will refuse it too, and say why
        return f"unreadable:{refused.reason}"


def _cache_key(encoder_name: str, fingerprints: dict[str, str]) -> str:
    manifest = {"format": CACHE_FORMAT, "encoder": encoder_name, "files": sorted(fingerprints.items())}
    return hashlib.sha256(json.dumps(manifest).encode()).hexdigest()


def _cache_path(directory: Path, encoder_name: str, root: Path) -> Path:
    # Readable prefix for humans; the hash keeps distinct encoders and folders apart.
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", encoder_name)[:60]
    digest = hashlib.sha256(os.fsencode(encoder_name) + b"\0" + os.fsencode(root.resolve())).hexdigest()[:16]
    return directory / f"{slug}-{digest}.npy"


def _fits(cached: tuple[dict, np.ndarray] | None, key: str) -> bool:
    return cached is not None and cached[0]["key"] == key


def _read_cache(data_path: Path, encoder: Encoder) -> tuple[dict, np.ndarray] | None:
    """``(meta, vectors (n, d))`` if the meta file vouches for the data file's exact bytes, else None.

    Vectors that are not finite are refused even with a matching hash: they were written by an
    older version that did not check, or by hand, and would make every score NaN.
    """
    meta_path = data_path.with_name(data_path.name + ".json")
    try:
        meta = json.loads(meta_path.read_text())
        if (not {"key", "rows", "skipped"} <= meta.keys() or meta.get("format") != CACHE_FORMAT
                or meta["encoder"] != encoder.name or sha256_file(data_path) != meta["sha256"]):
            return None
        vectors = np.load(data_path, allow_pickle=False)
        if list(vectors.shape) != meta["shape"] or vectors.shape != (len(meta["rows"]), encoder.dim):
            return None
        return (meta, vectors) if np.isfinite(vectors).all() else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(data_path: Path, vectors: np.ndarray, meta: dict) -> dict:
    """Data first, then the meta that vouches for it: a run killed in between leaves a cache never trusted."""
    atomic_write(data_path, lambda handle: np.save(handle, vectors, allow_pickle=False))
    meta = {**meta, "format": CACHE_FORMAT, "shape": list(vectors.shape), "dtype": vectors.dtype.str,
            "sha256": sha256_file(data_path)}
    meta_path = data_path.with_name(data_path.name + ".json")
    atomic_write(meta_path, lambda handle: handle.write(json.dumps(meta).encode()))
    return meta


def _rebuild(root: Path, files: list[str], fingerprints: dict[str, str], key: str,
             cached: tuple[dict, np.ndarray] | None, partial: Path, data_path: Path, encoder: Encoder,
             batch_size: int, progress: bool) -> tuple[tuple[dict, np.ndarray], int]:
    """Encode what neither the stale cache nor a killed run's batches hold, and write the full cache."""
    # A stale but intact cache still holds good vectors for every file whose content is unchanged.
    known = {fp: cached[1][i] for i, (_, fp) in enumerate(cached[0]["rows"])} if cached else {}
    known.update(_read_partial(partial, encoder))
    paths, vectors, skipped, reused = _build(root, files, fingerprints, known, encoder, batch_size, progress,
                                             lambda batch, encoded: _save_batch(partial, encoder, batch, encoded))
    meta = _write_cache(data_path, vectors, {
        "key": key, "encoder": encoder.name, "folder": display_name(root.resolve()),
        "rows": [[rel, fingerprints[rel]] for rel in paths], "skipped": [list(entry) for entry in skipped],
    })
    return (meta, vectors), reused


def _build(
    root: Path,
    files: list[str],
    fingerprints: dict[str, str],
    known: dict[str, np.ndarray],
    encoder: Encoder,
    batch_size: int,
    progress: bool,
    finished: Callable[[list[str], np.ndarray], None] | None = None,
) -> tuple[list[str], np.ndarray, list[tuple[str, str]], int]:
    """``(paths, vectors (n, d) float32, skipped, reused)``: known content reused, the rest loaded and encoded.

    ``finished(fingerprints, vectors)`` is called with each encoded batch, to keep it if the run is killed.
    """
    vectors: dict[str, np.ndarray] = {rel: known[fingerprints[rel]] for rel in files if fingerprints[rel] in known}
    skipped: list[tuple[str, str]] = []
    pending = [rel for rel in files if rel not in vectors]
    batch_paths, batch_images = [], []

    def flush() -> None:
        encoded = encoder.encode_images(batch_images, batch_size=batch_size).numpy()
        _check_vectors(encoded, batch_paths, encoder)
        if finished is not None:
            finished([fingerprints[rel] for rel in batch_paths], encoded)
        vectors.update(zip(batch_paths, encoded))
        batch_paths.clear()
        batch_images.clear()

    with tqdm(total=len(pending), desc="embedding", unit="img", file=sys.stderr, disable=not progress) as bar:
        for rel in pending:
            try:
                batch_images.append(load_image(root / rel, name=display_name(rel)))
                batch_paths.append(rel)
            except ImageLoadError as error:
                skipped.append((display_name(rel), error.reason))
            if len(batch_images) == batch_size:
                flush()
            bar.update(1)
        if batch_images:
            flush()
    paths = [rel for rel in files if rel in vectors]
    array = np.stack([vectors[rel] for rel in paths]).astype(np.float32) if paths else np.zeros((0, encoder.dim), np.float32)
    return paths, array, skipped, len(files) - len(pending)


def _check_vectors(encoded: np.ndarray, paths: list[str], encoder: Encoder) -> None:
    """Refuse NaN, infinite or all-zero rows: cached, they would silently poison every later search."""
    bad = ~np.isfinite(encoded).all(axis=1) | ~(np.linalg.norm(encoded, axis=1) > 0.5)
    if bad.any():
        first = display_name(paths[int(np.flatnonzero(bad)[0])])
        raise ValueError(
            f"encoder {encoder.name!r} returned NaN, infinite or zero vectors for {int(bad.sum())} of {len(paths)} "
            f"images (first: {first!r}); its weights or its arithmetic are broken (check the checkpoint, or try "
            "another device or float32). Nothing was cached for them"
        )


@contextmanager
def _build_lock(data_path: Path) -> Iterator[Path]:
    """Hold the lock of ``data_path``'s partial folder (created if needed) and yield that folder.

    A run that finishes removes the folder and its lock file; a run that was waiting on the old
    lock file then finds it gone and locks a fresh one, so two runs never build at once.
    """
    partial = data_path.with_name(data_path.name + ".partial")
    lock_path = partial / "lock"
    while True:
        partial.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except FileNotFoundError:  # the folder was removed between mkdir and open
            continue
        try:
            if fcntl is not None:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            try:
                current = os.path.samestat(os.fstat(descriptor), os.stat(lock_path))
            except FileNotFoundError:
                current = False
            if current:
                yield partial
                return
        finally:
            os.close(descriptor)


def _remove_stray_temporaries(data_path: Path, partial: Path) -> None:
    """Delete the temporary files a killed run's atomic writes left; only the lock holder writes them."""
    strays = [*data_path.parent.glob(f".{glob_escape(data_path.name)}.*.tmp"), *partial.glob(".*.tmp")]
    for stray in strays:
        stray.unlink(missing_ok=True)


def _save_batch(partial: Path, encoder: Encoder, fingerprints: list[str], vectors: np.ndarray) -> None:
    """One finished batch, by content hash, so that a killed run's work is reused by the next run."""
    name = hashlib.sha256("\n".join(fingerprints).encode()).hexdigest()[:24]
    atomic_write(partial / f"batch-{name}.npz", lambda handle: np.savez(
        handle, fingerprints=np.array(fingerprints, dtype=str), vectors=vectors.astype(np.float32),
        encoder=np.array(encoder.name), format=np.array(CACHE_FORMAT)))


def _read_partial(partial: Path, encoder: Encoder) -> dict[str, np.ndarray]:
    """``content hash -> vector`` from the batches in ``partial``; damaged or foreign batches are deleted."""
    known: dict[str, np.ndarray] = {}
    for batch in sorted(partial.glob(_BATCH_GLOB)):
        try:
            with np.load(batch, allow_pickle=False) as stored:
                fingerprints, vectors = stored["fingerprints"].tolist(), stored["vectors"]
                fits = (str(stored["encoder"]) == encoder.name and int(stored["format"]) == CACHE_FORMAT
                        and vectors.shape == (len(fingerprints), encoder.dim) and np.isfinite(vectors).all())
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            fits = False
        if fits:
            known.update(zip(fingerprints, vectors))
        else:
            batch.unlink(missing_ok=True)
    return known


def _discard_partial(partial: Path) -> None:
    """Remove the partial folder once the full cache holds everything (the lock file last)."""
    for entry in partial.iterdir():
        if entry.name != "lock":
            entry.unlink(missing_ok=True)
    (partial / "lock").unlink(missing_ok=True)
    try:
        partial.rmdir()
    except OSError:  # a waiting run has just created its own lock file here; it removes the folder when done
        pass


@dataclass(frozen=True, eq=False)
class FolderStorePlan:
    """What embedding a folder into a store is fixed by, before any image is read.

    ``root`` is the image folder; ``plan`` the :class:`~anchordiv.store.StorePlan` (every file's
    relative path and content sha256 in sorted order, the encoder, the labels CSV's sha256,
    ``shard_rows``, ``dtype``, the entries refused while listing). Every engine builds its store
    from this one plan, so a store started by one engine is resumed by any other.
    """

    root: Path
    plan: StorePlan
    labels_table: pd.DataFrame | None
    labels_csv: Path | None

    def labels(self, paths: list[str]) -> pd.DataFrame:
        """The labels of the kept ``paths`` (one row each, in order), as :func:`embed_folder` gives them."""
        return _labels(paths, self.labels_table, self.labels_csv)[0]


def plan_folder_store(
    folder: str | os.PathLike,
    encoder_name: str,
    dim: int,
    labels_csv: str | os.PathLike | None = None,
    shard_rows: int = 4096,
    dtype: str = "float16",
) -> FolderStorePlan:
    """The :class:`FolderStorePlan` of embedding ``folder`` with the encoder named ``encoder_name``
    (vectors of dimension ``dim``); hashes every file but reads no image.

    Raises ``ValueError`` for a missing, system or empty folder and an unreadable labels CSV.
    """
    root, csv_path, table, files, unread = _open_folder(folder, labels_csv)
    if not files:
        raise ValueError(f"image folder {display_name(folder)!r} holds no files to embed; put images in it")
    plan = StorePlan(
        items=tuple((rel, _fingerprint(root / rel)) for rel in files), dim=dim, encoder=encoder_name,
        shard_rows=shard_rows, dtype=dtype, skipped=tuple(unread), source=str(root),
        # The format covers the loader's rules; the CSV's hash, the labels written at the end.
        settings={"format": CACHE_FORMAT, "labels_sha256": sha256_file(csv_path) if csv_path is not None else None},
    )
    return FolderStorePlan(root=root, plan=plan, labels_table=table, labels_csv=csv_path)


def embed_folder_to_store(
    folder: str | os.PathLike,
    encoder: Encoder,
    out: str | os.PathLike,
    labels_csv: str | os.PathLike | None = None,
    shard_rows: int = 4096,
    batch_size: int = 64,
    dtype: str = "float16",
    progress: Callable[[float, str], None] | None = None,
    overwrite: bool = False,
) -> GalleryStore:
    """Embed every image under ``folder`` with ``encoder`` into a :class:`~anchordiv.store.GalleryStore`
    in the folder ``out``, ``shard_rows`` files per shard; resumable.

    Files, labels and skipped files are as in :func:`embed_folder`; a file that is not an
    acceptable image gets no row (rows keep ids ``0 .. G-1`` in sorted path order) and is listed
    with its reason in ``store.skipped``. The plan (every file's path and content sha256, the
    encoder, the labels CSV, ``shard_rows``, ``dtype``) is fixed first: a rerun after a kill keeps
    the finished shards (checked by sha256) and embeds only the rest; a damaged shard is named in
    ``progress`` and ``store.build_report.rebuilt`` and embedded again. A changed folder, encoder or
    setting is refused unless ``overwrite=True`` (which embeds everything afresh).
    ``progress(fraction, text)`` is told after each shard. This is the local engine (shards in
    order, in this process); :func:`anchordiv.ray_embed.embed_folder_to_store_ray` builds the
    same store on Ray.
    """
    planned = plan_folder_store(folder, encoder.name, encoder.dim, labels_csv, shard_rows, dtype)
    return build_store(
        out, planned.plan, lambda keys: embed_files(planned.root, keys, encoder, batch_size),
        labels=planned.labels, progress=progress, overwrite=overwrite)


def embed_files(root: Path, paths: list[str], encoder: Encoder, batch_size: int
                ) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """``(vectors (kept, d), skipped)`` for ``paths`` under ``root``: images loaded ``batch_size``
    at a time (a shard's images are never all in memory), ``skipped`` ``(index, reason)``.

    What every engine runs on its share of a store's files. Raises ``ValueError`` when ``encoder``
    returns NaN, infinite or zero vectors.
    """
    chunks: list[np.ndarray] = []
    skipped: list[tuple[int, str]] = []
    for start in range(0, len(paths), batch_size):
        images, kept = [], []
        for index in range(start, min(start + batch_size, len(paths))):
            try:
                images.append(load_image(root / paths[index], name=display_name(paths[index])))
                kept.append(paths[index])
            except ImageLoadError as error:
                skipped.append((index, error.reason))
        if images:
            encoded = encoder.encode_images(images, batch_size=batch_size).numpy()
            _check_vectors(encoded, kept, encoder)
            chunks.append(encoded)
    vectors = np.concatenate(chunks) if chunks else np.zeros((0, encoder.dim), np.float32)
    return vectors, skipped
