"""Published image datasets read from a user's disk in their standard layouts, as :class:`ImageLayout`.

Four layouts (:data:`LAYOUTS`, each described on its loader): ImageNet-R, CUB-200-2011,
Sketchy and CheXpert (the small version). A loader reads the dataset's metadata files and lists
its folders; it never reads image pixels and never reaches the network. Embedding is a separate
step, and the two meet on ``path``::

    layout = load_layout("imagenet-r", "/data/imagenet-r")
    gallery = embed_folder(layout.root, encoder)                  # anchordiv.embeddings
    rows = pd.DataFrame({"path": gallery.paths, "row": range(len(gallery.paths))})
    table = layout.labels.merge(rows, on="path", how="inner")     # labels + embedding row

:func:`~anchordiv.embeddings.embed_folder` embeds every file under ``root``, so the join drops the
files a layout does not label (the other CUB split, CheXpert lateral views with ``frontal_only``,
the other Sketchy augmentations, ImageNet-R's ``README.txt``); a labelled path that it could not
read as an image is in its ``skipped`` instead.

Nothing is left out silently: a wrong root, a missing or malformed metadata file, an image listed
in the metadata but missing on disk, or a file in a scanned folder that does not fit the layout's
naming raises ``ValueError`` naming the file, what the layout expects, and, when the root given is
the folder above the dataset's own, the folder to pass instead.
"""
from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..embeddings.csv_files import read_csv_file
from ..embeddings.scan import list_files


@dataclass(frozen=True)
class ImageLayout:
    """A labelled image collection on disk, read from a published dataset's layout.

    ``root`` is the folder to embed with :func:`anchordiv.embeddings.embed_folder`; ``labels`` has
    one row per labelled image, sorted by ``path`` (``/``-separated, relative to ``root``), then the
    layout's label columns. The ``*_column`` fields name the columns that define relevance:
    equal ``object_column`` values are the same object or class, equal ``style_column`` values the
    same style or domain, ``group_column`` a coarser grouping of queries for per-category tables;
    each is ``None`` where the dataset has no such label. ``condition_columns`` are bool columns
    to be judged one at a time (CheXpert's pathologies). ``anchors`` maps a role (``"object"``,
    ``"style"``, ``"condition"``; only those that apply) to its anchor phrases: the distinct values
    of the role's column in label order, or for ``"condition"`` the condition column names.
    """

    name: str
    root: Path
    labels: pd.DataFrame
    object_column: str | None
    style_column: str | None
    group_column: str | None
    condition_columns: tuple[str, ...]
    anchors: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class _Spec:
    """How a layout is named in messages: its kind, its archive's folder name and what that folder holds."""

    kind: str
    folder: str
    holds: str

    def root(self, root: str | os.PathLike) -> Path:
        """``root`` as a Path, or a ValueError if it is not a folder."""
        path = Path(root).expanduser()
        if not path.is_dir():
            raise self.error(path, f"root {str(root)!r} is not a folder")
        return path

    def require(self, root: Path, relative: str, folder: bool = False) -> Path:
        """``root / relative``, or a ValueError naming it if that file (or ``folder``) is missing."""
        path = root / relative
        if not (path.is_dir() if folder else path.is_file()):
            raise self.error(root, f"{path} is missing")
        return path

    def error(self, root: Path, problem: str) -> ValueError:
        """``problem`` plus what the layout expects at ``root`` and, if it is one level up, where it is."""
        hint = ""
        if root.name != self.folder and (root / self.folder).is_dir():
            hint = f"; {root / self.folder} exists: pass that folder as the root"
        return ValueError(f"{self.kind}: {problem}; expected the {self.folder!r} folder, holding {self.holds}{hint}")


IMAGENET_R = _Spec("imagenet-r", "imagenet-r", "<wnid>/<rendition>_<n>.jpg (e.g. n01443537/art_0.jpg) and README.txt")
CUB200 = _Spec("cub-200", "CUB_200_2011", "images.txt, image_class_labels.txt, classes.txt, train_test_split.txt and images/")
SKETCHY = _Spec("sketchy", "256x256", "photo/<augmentation>/<class>/*.jpg and sketch/<augmentation>/<class>/*.png")
CHEXPERT = _Spec("chexpert", "CheXpert-v1.0-small", "train.csv, valid.csv and the train/ and valid/ image folders")

_IMAGENET_R_FILE = re.compile(r"(?P<wnid>n\d{8})/(?P<style>[^/]+)_\d+\.[^/.]+")
_WNID_LINE = re.compile(r"(n\d{8})\s+(\S.*?)\s*")
_CLASS_FILE = re.compile(r"(?P<cls>[^/]+)/(?P<stem>[^/]+)\.[^/.]+")
CUB_SPLITS: tuple[str, ...] = ("train", "test", "all")
SKETCHY_STYLES: tuple[str, ...] = ("photo", "sketch")
CHEXPERT_SPLITS: tuple[str, ...] = ("train", "valid")
CHEXPERT_UNCERTAIN: tuple[str, ...] = ("negative", "positive")
CHEXPERT_CONDITIONS: tuple[str, ...] = (
    "No Finding", "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema",
    "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion", "Pleural Other",
    "Fracture", "Support Devices",
)


def load_layout(kind: str, root: str | os.PathLike, **options) -> ImageLayout:
    """The dataset of layout ``kind`` (a key of :data:`LAYOUTS`) at ``root``; ``options`` go to its loader."""
    if kind not in LAYOUTS:
        raise ValueError(f"unknown layout {kind!r}; choose from {list(LAYOUTS)}")
    loader = LAYOUTS[kind]
    accepted = [name for name in inspect.signature(loader).parameters if name != "root"]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(f"layout {kind!r} takes the options {accepted}, not {unknown}")
    return loader(root, **options)


# ---- ImageNet-R -----------------------------------------------------------------------------------

def load_imagenet_r(root: str | os.PathLike) -> ImageLayout:
    """ImageNet-R (Hendrycks et al. 2021): 200 ImageNet classes in 15 renditions.

    ``root`` is the ``imagenet-r`` folder unpacked from ``imagenet-r.tar``, which is also the
    folder to embed::

        imagenet-r/
          README.txt               "n01443537 goldfish" lines (other lines are ignored)
          n01443537/art_0.jpg
          n01443537/cartoon_12.jpg
          n01484850/deviantart_3.jpg

    Columns: ``path`` (``n01443537/art_0.jpg``), ``wnid``, ``object`` (the class name from
    README.txt with underscores as spaces, "great white shark"; the wnid itself when README.txt is
    absent or maps no class, in which case the object anchors are wnids, which a text encoder
    cannot read) and ``style`` (the rendition: the file name before its last ``_<digits>``,
    "art", "cartoon", "deviantart", ...). Anchors: ``"object"`` and ``"style"``.
    Every file under the class folders must be named ``<wnid>/<rendition>_<n>.<ext>``; README.txt
    is the only other file allowed (embed_folder reports it as skipped, not an image).
    """
    base = IMAGENET_R.root(root)
    matches = _match_files(base, _IMAGENET_R_FILE, IMAGENET_R, base, allowed={"README.txt"})
    labels = pd.DataFrame([(m.string, m["wnid"], m["style"]) for m in matches], columns=["path", "wnid", "style"])
    names = _imagenet_r_names(base / "README.txt", labels["wnid"].unique())
    labels.insert(2, "object", labels["wnid"].map(names))
    return _layout(IMAGENET_R, base, labels, object_column="object", style_column="style")


def _imagenet_r_names(readme: Path, wnids: Iterable[str]) -> dict[str, str]:
    """``wnid -> class name`` for ``wnids`` from README.txt's "n01443537 goldfish" lines; wnids if it has none."""
    mapping = {}
    if readme.is_file():
        for line in readme.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _WNID_LINE.fullmatch(line.strip())
            if match:
                mapping[match[1]] = match[2].replace("_", " ")
    if not mapping:
        return {wnid: wnid for wnid in wnids}
    unnamed = [wnid for wnid in wnids if wnid not in mapping]
    if unnamed:
        raise ValueError(f"imagenet-r: {readme} names no class for {len(unnamed)} folders ({_first(unnamed)}); "
                         "restore the README.txt of the ImageNet-R archive, or remove it to use wnids as names")
    names = {wnid: mapping[wnid] for wnid in wnids}
    repeated = pd.Series(list(names.values())).duplicated()
    if repeated.any():
        raise ValueError(f"imagenet-r: {readme} gives several folders the name "
                         f"{list(names.values())[int(repeated.idxmax())]!r}; class names must be distinct")
    return names


# ---- CUB-200-2011 ---------------------------------------------------------------------------------

def load_cub200(root: str | os.PathLike, split: str = "test") -> ImageLayout:
    """CUB-200-2011 (Wah et al. 2011): 11,788 photos of 200 bird species.

    ``root`` is the ``CUB_200_2011`` folder of ``CUB_200_2011.tgz``; the folder to embed is its
    ``images`` folder, and paths are relative to it::

        CUB_200_2011/
          images.txt               "1 001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg"
          image_class_labels.txt   "1 1"           (image id, class id)
          classes.txt              "1 001.Black_footed_Albatross"
          train_test_split.txt     "1 0"           (image id, 1 = train, 0 = test)
          images/001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg

    ``split`` is "train", "test" or "all". Columns: ``path``, ``image_id`` (as in images.txt),
    ``object`` (the species in plain lower-case words, "black footed albatross"), ``group``
    (its last word, the family: "albatross", "warbler", "gull") and ``split``. Anchors:
    ``"object"``. embed_folder embeds both splits (the other one drops out of the join). Raises
    ``ValueError`` if an image of the split is missing from ``images/``.
    """
    if split not in CUB_SPLITS:
        raise ValueError(f"cub-200: split={split!r} is not one of {list(CUB_SPLITS)}")
    base = CUB200.root(root)
    images = CUB200.require(base, "images", folder=True)
    table = _read_pairs(CUB200, base, "images.txt", ("image id", "path"))
    labels = pd.DataFrame({"path": table.values, "image_id": table.index})
    classes = _read_pairs(CUB200, base, "classes.txt", ("class id", "class folder"))
    class_ids = _lookup(labels["image_id"], _read_pairs(CUB200, base, "image_class_labels.txt", ("image id", "class id")),
                        base / "image_class_labels.txt")
    labels["object"] = _lookup(class_ids, classes.map(_cub_species), base / "classes.txt")
    labels["group"] = labels["object"].str.rpartition(" ")[2]
    flags = _read_pairs(CUB200, base, "train_test_split.txt", ("image id", "1 train / 0 test"))
    labels["split"] = _lookup(labels["image_id"], flags.map({"1": "train", "0": "test"}), base / "train_test_split.txt")
    if split != "all":
        labels = labels[labels["split"] == split]
    _check_files(CUB200, base, images, labels["path"])
    return _layout(CUB200, images, labels, object_column="object", group_column="group")


def _cub_species(folder: str) -> str:
    """"001.Black_footed_Albatross" -> "black footed albatross"."""
    return re.sub(r"^\d+\.", "", folder).replace("_", " ").lower()


def _read_pairs(spec: _Spec, base: Path, name: str, fields: tuple[str, str]) -> pd.Series:
    """The "<key> <value>" lines of ``base / name`` as a Series indexed by key; ValueError on a bad line."""
    path = spec.require(base, name)
    pairs: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(maxsplit=1)
        if len(parts) != 2 or parts[0] in pairs:
            raise ValueError(f"{spec.kind}: {path}, line {number}: expected '<{fields[0]}> <{fields[1]}>' "
                             f"with each {fields[0]} once, found {line!r}")
        pairs[parts[0]] = parts[1].strip()
    if not pairs:
        raise spec.error(base, f"{path} is empty")
    return pd.Series(pairs, dtype=object)


def _lookup(keys: pd.Series, table: pd.Series, source: Path) -> pd.Series:
    """``table[key]`` for each of ``keys`` (index kept); ValueError naming the keys ``source`` has no value for."""
    values = keys.map(table)
    missing = keys[values.isna()]
    if len(missing):
        raise ValueError(f"{source}: no valid entry for {len(missing)} of {len(keys)} ids ({_first(missing)})")
    return values


# ---- Sketchy --------------------------------------------------------------------------------------

def load_sketchy(root: str | os.PathLike, augmentation: str = "tx_000000000000") -> ImageLayout:
    """The Sketchy database (Sangkloy et al. 2016), rendered 256 x 256: 125 classes as photos and sketches.

    ``root`` is the ``256x256`` folder of ``rendered_256x256.7z``, which is also the folder to embed::

        256x256/
          photo/tx_000000000000/airplane/n02691156_58.jpg
          photo/tx_000000000000/hot-air_balloon/n03541923_1.jpg
          sketch/tx_000000000000/airplane/n02691156_58-1.png      (sketch 1 of that photo)
          photo/tx_000100000000/...  sketch/tx_000000000110/...   (other augmentations)

    Only ``augmentation`` (default ``tx_000000000000``, no augmentation) is labelled. embed_folder
    embeds every augmentation folder under ``root`` all the same (about six times the work for the
    full download; they drop out of the join): to embed only one, keep just ``photo/<augmentation>``
    and ``sketch/<augmentation>`` in the folder. Columns: ``path``
    (``photo/tx_000000000000/airplane/n02691156_58.jpg``), ``object`` (the class with underscores as
    spaces: "hot-air balloon"), ``style`` ("photo" or "sketch") and ``instance`` (the photo a file
    shows or was drawn from, ``n02691156_58``). Anchors: ``"object"`` and ``"style"``.
    """
    if not augmentation or "/" in augmentation or "\\" in augmentation or augmentation.startswith("."):
        raise ValueError(f"sketchy: augmentation={augmentation!r} must be a folder name such as 'tx_000000000000'")
    base = SKETCHY.root(root)
    labels = pd.concat([_sketchy_style(base, style, augmentation) for style in SKETCHY_STYLES], ignore_index=True)
    return _layout(SKETCHY, base, labels, object_column="object", style_column="style")


def _sketchy_style(base: Path, style: str, augmentation: str) -> pd.DataFrame:
    """Labels of ``<style>/<augmentation>/<class>/<file>`` under ``base``."""
    prefix = f"{style}/{augmentation}"
    folder = base / prefix
    if not folder.is_dir():
        found = sorted(path.name for path in (base / style).iterdir() if path.is_dir()) if (base / style).is_dir() else []
        raise SKETCHY.error(base, f"{folder} is missing" + (f" (augmentations there: {found})" if found else ""))
    matches = _match_files(folder, _CLASS_FILE, SKETCHY, base)
    return pd.DataFrame({
        "path": [f"{prefix}/{m.string}" for m in matches],
        "object": [m["cls"].replace("_", " ") for m in matches],
        "style": style,
        "instance": [re.sub(r"-\d+$", "", m["stem"]) if style == "sketch" else m["stem"] for m in matches],
    })


# ---- CheXpert -------------------------------------------------------------------------------------

def load_chexpert(
    root: str | os.PathLike, split: str = "valid", frontal_only: bool = True, uncertain: str = "negative"
) -> ImageLayout:
    """CheXpert-v1.0-small (Irvin et al. 2019): chest radiographs with 14 observations each.

    ``root`` is the ``CheXpert-v1.0-small`` folder; the folder to embed is ``<root>/<split>``
    ("train" or "valid"), and paths are relative to it::

        CheXpert-v1.0-small/
          valid.csv        Path,Sex,Age,Frontal/Lateral,AP/PA,No Finding,...,Support Devices
                           CheXpert-v1.0-small/valid/patient64541/study1/view1_frontal.jpg,...
          train.csv
          valid/patient64541/study1/view1_frontal.jpg
          train/patient00001/study1/view1_frontal.jpg

    Columns: ``path`` (``patient64541/study1/view1_frontal.jpg``: the CSV's ``Path`` after its
    ``<split>/`` component), ``patient``, ``study`` (``patient64541/study1``), ``view`` (the
    ``Frontal/Lateral`` value), then the 14 observations of :data:`CHEXPERT_CONDITIONS` as bool,
    under their CSV names: 1.0 is True, 0.0 and blank are False, and -1.0 (uncertain) is False for
    ``uncertain="negative"`` and True for ``"positive"``. ``frontal_only`` keeps the frontal views
    (embed_folder still embeds the lateral ones; they drop out of the join). No object or style
    column; ``anchors["condition"]`` is the 14 names, in ``condition_columns`` order. Raises
    ``ValueError`` if an image in the CSV is missing on disk.
    """
    if split not in CHEXPERT_SPLITS:
        raise ValueError(f"chexpert: split={split!r} is not one of {list(CHEXPERT_SPLITS)}")
    if uncertain not in CHEXPERT_UNCERTAIN:
        raise ValueError(f"chexpert: uncertain={uncertain!r} is not one of {list(CHEXPERT_UNCERTAIN)} "
                         "(how the -1.0 labels count)")
    base = CHEXPERT.root(root)
    csv_path = CHEXPERT.require(base, f"{split}.csv")
    folder = CHEXPERT.require(base, split, folder=True)
    table = _read_chexpert_csv(csv_path)
    if frontal_only:
        table = table[table["Frontal/Lateral"] == "Frontal"]
    paths = table["Path"].map(lambda path: _below(path, split, csv_path))
    labels = pd.DataFrame({
        "path": paths,
        "patient": paths.map(lambda path: path.split("/")[0]),
        "study": paths.map(lambda path: "/".join(path.split("/")[:2])),
        "view": table["Frontal/Lateral"],
    })
    for condition in CHEXPERT_CONDITIONS:
        labels[condition] = _chexpert_condition(table[condition], uncertain, csv_path)
    _check_files(CHEXPERT, base, folder, labels["path"])
    return _layout(CHEXPERT, folder, labels, condition_columns=CHEXPERT_CONDITIONS)


def _read_chexpert_csv(path: Path) -> pd.DataFrame:
    """The CSV at ``path`` as strings (blank cells ""), with a ValueError if it is unreadable or lacks a column."""
    # Bounded, regular files only, and errors that name the line and the fix (see read_csv_file).
    table = read_csv_file(path, f"chexpert: {path}", dtype=str, keep_default_na=False)
    missing = [column for column in ("Path", "Frontal/Lateral") + CHEXPERT_CONDITIONS if column not in table.columns]
    if missing:
        raise ValueError(f"chexpert: {path} lacks the columns {missing}; a CheXpert CSV has Path, Frontal/Lateral "
                         "and the 14 observation columns")
    return table


def _below(path: str, split: str, source: Path) -> str:
    """The part of a CSV ``Path`` after its first ``<split>`` component, ``/``-separated."""
    parts = path.replace("\\", "/").split("/")
    if split not in parts[:-1]:
        raise ValueError(f"chexpert: {source}: Path {path!r} has no {split}/ folder in it")
    return "/".join(parts[parts.index(split) + 1:])


def _chexpert_condition(values: pd.Series, uncertain: str, source: Path) -> pd.Series:
    """A CheXpert label column ("1.0", "0.0", "-1.0", "") as bool; -1 counts as ``uncertain`` says."""
    numbers = pd.to_numeric(values.str.strip().replace("", "0"), errors="coerce")
    bad = values[~numbers.isin([1.0, 0.0, -1.0])]
    if len(bad):
        raise ValueError(f"chexpert: {source}: column {values.name!r} holds {bad.iloc[0]!r}; "
                         "labels are 1.0, 0.0, -1.0 (uncertain) or blank")
    return (numbers == 1.0) | ((numbers == -1.0) & (uncertain == "positive"))


# ---- shared ---------------------------------------------------------------------------------------

def _match_files(folder: Path, pattern: re.Pattern, spec: _Spec, base: Path, allowed: Collection[str] = ()) -> list[re.Match]:
    """Every file embed_folder would find under ``folder``, matched by ``pattern`` (relative paths).

    Raises ValueError naming the files (other than ``allowed``) that do not match, or if none do.
    """
    matches, strays = [], []
    for relative in list_files(folder, exclude=None):
        match = pattern.fullmatch(relative)
        if match:
            matches.append(match)
        elif relative not in allowed:
            strays.append(relative)
    if strays:
        raise spec.error(base, f"{len(strays)} files under {folder} do not fit the layout ({_first(strays)})")
    if not matches:
        raise spec.error(base, f"no images under {folder}")
    return matches


def _check_files(spec: _Spec, base: Path, folder: Path, paths: pd.Series) -> None:
    """ValueError with a count and the first few if any of ``paths`` (relative to ``folder``) is not a file."""
    missing = [path for path in paths if not (folder / path).is_file()]
    if missing:
        raise spec.error(base, f"{len(missing)} of {len(paths)} listed images are missing from {folder} ({_first(missing)})")


def _layout(
    spec: _Spec,
    root: Path,
    labels: pd.DataFrame,
    object_column: str | None = None,
    style_column: str | None = None,
    group_column: str | None = None,
    condition_columns: tuple[str, ...] = (),
) -> ImageLayout:
    """The ImageLayout of ``labels`` (sorted by path here), with anchors from its columns."""
    if labels.empty:
        raise spec.error(root, "no images are labelled")
    labels = labels.sort_values("path", kind="stable").reset_index(drop=True)
    repeated = labels["path"][labels["path"].duplicated()]
    if len(repeated):
        raise spec.error(root, f"{len(repeated)} images are listed more than once ({_first(repeated)})")
    anchors = {role: tuple(dict.fromkeys(labels[column])) for role, column in
               (("object", object_column), ("style", style_column)) if column is not None}
    if condition_columns:
        anchors["condition"] = tuple(condition_columns)
    return ImageLayout(name=spec.kind, root=root, labels=labels, object_column=object_column,
                       style_column=style_column, group_column=group_column,
                       condition_columns=tuple(condition_columns), anchors=anchors)


def _first(items: Iterable, count: int = 3) -> str:
    """The first ``count`` of ``items`` for a message: "'a', 'b', 'c', ..."."""
    items = list(items)
    return ", ".join(repr(str(item)) for item in items[:count]) + (", ..." if len(items) > count else "")


LAYOUTS: dict[str, Callable[..., ImageLayout]] = {
    "imagenet-r": load_imagenet_r,
    "cub-200": load_cub200,
    "sketchy": load_sketchy,
    "chexpert": load_chexpert,
}
