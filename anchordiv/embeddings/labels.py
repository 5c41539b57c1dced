"""The labels of a folder's images: each image's folder, or the row a labels CSV gives it (joined
on a ``path`` column relative to the image folder or, failing that, a ``filename`` column)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..images import display_name
from .csv_files import read_csv_file


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


def folder_labels(paths: list[str], table: pd.DataFrame | None, csv_path: Path | None) -> tuple[pd.DataFrame, list[str]]:
    """``(labels, unlabelled)`` of the images at ``paths`` (relative to their folder), labelled by
    the labels ``table`` read from ``csv_path`` (:func:`read_labels_table`), or by their folders without one: one row per path with ``path`` (its display name: a name that is not
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
    them) that the labels CSV has no row for: what :attr:`FolderEmbeddings.unlabelled` says of an
    :func:`embed_folder` result, for a store built by :func:`embed_folder_to_store` or on Ray.
    Reads and checks the CSV (``ValueError`` as :func:`embed_folder`)."""
    csv_path = Path(labels_csv).expanduser()
    return folder_labels(list(paths), read_labels_table(csv_path), csv_path)[1]


def _normalise_relative(path: str) -> str:
    """CSV paths as written by people: ``./a\\b.png`` and ``a/b.png`` both mean ``a/b.png``."""
    return Path(str(path).replace("\\", "/")).as_posix()

