"""Loaders of published datasets' on-disk layouts, on tiny fake copies built in tmp_path."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from anchordiv.datasets import LAYOUTS, ImageLayout, load_layout
from anchordiv.datasets.layouts import (
    CHEXPERT_CONDITIONS,
    load_chexpert,
    load_cub200,
    load_imagenet_r,
    load_sketchy,
)

README = """ImageNet-R (Rendition) contains art, cartoons, deviantart, ... of 200 ImageNet classes.
Header lines such as this one are not class names.

n01443537 goldfish
n01484850 great_white_shark
"""
IMAGENET_R_FILES = ["n01443537/art_0.jpg", "n01443537/cartoon_12.jpg", "n01484850/deviantart_3.jpg",
                    "n01484850/videogame_7.png"]
CUB_CLASSES = ["001.Black_footed_Albatross", "002.Laysan_Albatross", "158.Bay_breasted_Warbler"]
# image id -> (class id, relative path, 1 train / 0 test)
CUB_IMAGES = {
    1: (1, "001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg", 0),
    2: (1, "001.Black_footed_Albatross/Black_Footed_Albatross_0009_34.jpg", 1),
    3: (2, "002.Laysan_Albatross/Laysan_Albatross_0002_1027.jpg", 0),
    4: (3, "158.Bay_breasted_Warbler/Bay_Breasted_Warbler_0001_797112.jpg", 0),
    5: (3, "158.Bay_breasted_Warbler/Bay_Breasted_Warbler_0004_159.jpg", 1),
}
SKETCHY_FILES = ["photo/tx_000000000000/airplane/n02691156_58.jpg", "photo/tx_000000000000/hot-air_balloon/n03541923_1.jpg",
                 "sketch/tx_000000000000/airplane/n02691156_58-1.png", "sketch/tx_000000000000/airplane/n02691156_58-2.png",
                 "sketch/tx_000000000000/hot-air_balloon/n03541923_1-1.png",
                 "photo/tx_000100000000/airplane/n02691156_58.jpg", "sketch/tx_000000000110/airplane/n02691156_58-1.png"]
CHEXPERT_HEADER = "Path,Sex,Age,Frontal/Lateral,AP/PA," + ",".join(CHEXPERT_CONDITIONS)
# (path below valid/, Frontal/Lateral, Cardiomegaly, Edema, Pleural Effusion); the other observations are blank
CHEXPERT_VALID = [
    ("patient64541/study1/view1_frontal.jpg", "Frontal", "1.0", "0.0", "-1.0"),
    ("patient64541/study1/view2_lateral.jpg", "Lateral", "1.0", "0.0", "-1.0"),
    ("patient64542/study1/view1_frontal.jpg", "Frontal", "", "-1.0", "1.0"),
]


def write_image(path: Path, colour: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "PNG" if path.suffix == ".png" else "JPEG"
    Image.new("RGB", (8, 8), (colour * 40 % 256, 100, 200)).save(path, fmt)


def write_text(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


@pytest.fixture
def imagenet_r(tmp_path) -> Path:
    root = tmp_path / "imagenet-r"
    for i, relative in enumerate(IMAGENET_R_FILES):
        write_image(root / relative, i)
    (root / "README.txt").write_text(README)
    return root


@pytest.fixture
def cub(tmp_path) -> Path:
    root = tmp_path / "CUB_200_2011"
    write_text(root / "classes.txt", [f"{i} {name}" for i, name in enumerate(CUB_CLASSES, 1)])
    write_text(root / "images.txt", [f"{i} {path}" for i, (_, path, _) in CUB_IMAGES.items()])
    write_text(root / "image_class_labels.txt", [f"{i} {label}" for i, (label, _, _) in CUB_IMAGES.items()])
    write_text(root / "train_test_split.txt", [f"{i} {train}" for i, (_, _, train) in CUB_IMAGES.items()])
    for i, (_, path, _) in CUB_IMAGES.items():
        write_image(root / "images" / path, i)
    return root


@pytest.fixture
def sketchy(tmp_path) -> Path:
    root = tmp_path / "256x256"
    for i, relative in enumerate(SKETCHY_FILES):
        write_image(root / relative, i)
    return root


def chexpert_row(path: str, view: str, cardiomegaly: str, edema: str, effusion: str, split: str = "valid") -> str:
    values = {"Cardiomegaly": cardiomegaly, "Edema": edema, "Pleural Effusion": effusion}
    cells = [f"CheXpert-v1.0-small/{split}/{path}", "Female", "68", view, "AP" if view == "Frontal" else ""]
    return ",".join(cells + [values.get(name, "") for name in CHEXPERT_CONDITIONS])


@pytest.fixture
def chexpert(tmp_path) -> Path:
    root = tmp_path / "CheXpert-v1.0-small"
    write_text(root / "valid.csv", [CHEXPERT_HEADER] + [chexpert_row(*row) for row in CHEXPERT_VALID])
    write_text(root / "train.csv", [CHEXPERT_HEADER, chexpert_row("patient00001/study1/view1_frontal.jpg", "Frontal",
                                                                  "0.0", "1.0", "", split="train")])
    for i, row in enumerate(CHEXPERT_VALID):
        write_image(root / "valid" / row[0], i)
    write_image(root / "train/patient00001/study1/view1_frontal.jpg")
    return root


def check_contract(layout: ImageLayout) -> None:
    """What every layout promises: sorted unique paths to files under root, and the named columns."""
    labels = layout.labels
    assert labels.columns[0] == "path" and labels["path"].is_monotonic_increasing and labels["path"].is_unique
    assert list(labels.index) == list(range(len(labels)))
    assert all((layout.root / path).is_file() and "\\" not in path for path in labels["path"])
    for column in (layout.object_column, layout.style_column, layout.group_column, *layout.condition_columns):
        assert column is None or column in labels.columns
    for column in layout.condition_columns:
        assert labels[column].dtype == bool


# ---- ImageNet-R -----------------------------------------------------------------------------------

def test_imagenet_r_labels_class_names_and_renditions(imagenet_r):
    layout = load_imagenet_r(imagenet_r)
    check_contract(layout)
    assert layout.name == "imagenet-r" and layout.root == imagenet_r
    assert layout.labels.to_dict("list") == {
        "path": IMAGENET_R_FILES,
        "wnid": ["n01443537", "n01443537", "n01484850", "n01484850"],
        "object": ["goldfish", "goldfish", "great white shark", "great white shark"],
        "style": ["art", "cartoon", "deviantart", "videogame"],
    }
    assert (layout.object_column, layout.style_column, layout.group_column) == ("object", "style", None)
    assert layout.condition_columns == ()
    assert layout.anchors == {"object": ("goldfish", "great white shark"),
                              "style": ("art", "cartoon", "deviantart", "videogame")}


@pytest.mark.parametrize("readme", [None, "ImageNet-R\nno class lines at all\n"])
def test_imagenet_r_without_a_class_list_names_classes_by_wnid(imagenet_r, readme):
    if readme is None:
        (imagenet_r / "README.txt").unlink()
    else:
        (imagenet_r / "README.txt").write_text(readme)
    layout = load_imagenet_r(imagenet_r)
    assert layout.labels["object"].tolist() == layout.labels["wnid"].tolist()
    assert layout.anchors["object"] == ("n01443537", "n01484850")


def test_imagenet_r_readme_that_misses_a_folder_is_an_error(imagenet_r):
    (imagenet_r / "README.txt").write_text("n01443537 goldfish\n")
    with pytest.raises(ValueError, match=r"names no class for 1 folders \('n01484850'\)"):
        load_imagenet_r(imagenet_r)


def test_imagenet_r_files_off_the_naming_scheme_are_errors(imagenet_r):
    write_image(imagenet_r / "n01443537" / "goldfish.jpg")
    write_image(imagenet_r / "extras" / "art_1.jpg")
    (imagenet_r / "n01443537" / ".DS_Store").write_text("hidden files are ignored, as embed_folder ignores them")
    with pytest.raises(ValueError, match=r"2 files under .* do not fit the layout \('extras/art_1.jpg', 'n01443537/goldfish.jpg'\)"):
        load_imagenet_r(imagenet_r)


def test_embedding_the_root_gives_every_labelled_path_a_row(imagenet_r, tmp_path, no_network):
    from anchordiv.embeddings import embed_folder
    from anchordiv.encoders import load_encoder

    layout = load_layout("imagenet-r", imagenet_r)
    gallery = embed_folder(layout.root, load_encoder("builtin", device="cpu"), cache_dir=tmp_path / "cache", progress=False)
    rows = pd.DataFrame({"path": gallery.paths, "row": range(len(gallery.paths))})
    joined = layout.labels.merge(rows, on="path", how="left", validate="one_to_one")
    assert joined["row"].notna().all() and len(joined) == len(IMAGENET_R_FILES)
    assert gallery.embeddings[joined["row"].astype(int).tolist()].shape == (len(IMAGENET_R_FILES), gallery.embeddings.shape[1])
    assert [path for path, _ in gallery.skipped] == ["README.txt"]
    assert no_network == []


# ---- CUB-200-2011 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("split, ids", [("test", [1, 3, 4]), ("train", [2, 5]), ("all", [1, 2, 3, 4, 5])])
def test_cub_splits_species_and_families(cub, split, ids):
    layout = load_cub200(cub, split=split)
    check_contract(layout)
    assert layout.root == cub / "images"
    labels = layout.labels.set_index("image_id")
    assert sorted(int(i) for i in labels.index) == ids
    assert set(labels["split"]) == ({"train", "test"} if split == "all" else {split})
    names = {1: "black footed albatross", 2: "laysan albatross", 3: "bay breasted warbler"}
    for i in ids:
        label, path, _ = CUB_IMAGES[i]
        assert labels.loc[str(i), "path"] == path and labels.loc[str(i), "object"] == names[label]
        assert labels.loc[str(i), "group"] == names[label].split()[-1]
    assert (layout.object_column, layout.style_column, layout.group_column) == ("object", None, "group")
    assert set(layout.anchors) == {"object"} and set(layout.anchors["object"]) == set(labels["object"])


def test_cub_split_must_be_known(cub):
    with pytest.raises(ValueError, match=r"split='val' is not one of \['train', 'test', 'all'\]"):
        load_cub200(cub, split="val")


def test_cub_missing_images_are_counted_and_named(cub):
    (cub / "images" / CUB_IMAGES[1][1]).unlink()
    (cub / "images" / CUB_IMAGES[3][1]).unlink()
    with pytest.raises(ValueError, match=r"2 of 3 listed images are missing .*Black_Footed_Albatross_0046_18.jpg"):
        load_cub200(cub)
    assert len(load_cub200(cub, split="train").labels) == 2  # the train split has all its files


def test_cub_bad_metadata_lines_name_the_file_and_line(cub):
    write_text(cub / "images.txt", ["1 001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg", "2"])
    with pytest.raises(ValueError, match=r"images.txt, line 2: expected '<image id> <path>'"):
        load_cub200(cub)


def test_cub_images_without_a_class_are_errors(cub):
    write_text(cub / "image_class_labels.txt", ["1 1", "2 1", "3 2", "4 3"])
    with pytest.raises(ValueError, match=r"image_class_labels.txt: no valid entry for 1 of 5 ids \('5'\)"):
        load_cub200(cub)


# ---- Sketchy --------------------------------------------------------------------------------------

def test_sketchy_photos_and_sketches_of_one_augmentation(sketchy):
    layout = load_sketchy(sketchy)
    check_contract(layout)
    assert layout.root == sketchy
    assert layout.labels.to_dict("list") == {
        "path": sorted(path for path in SKETCHY_FILES if "/tx_000000000000/" in path),
        "object": ["airplane", "hot-air balloon", "airplane", "airplane", "hot-air balloon"],
        "style": ["photo", "photo", "sketch", "sketch", "sketch"],
        "instance": ["n02691156_58", "n03541923_1", "n02691156_58", "n02691156_58", "n03541923_1"],
    }
    assert (layout.object_column, layout.style_column, layout.group_column) == ("object", "style", None)
    assert layout.anchors == {"object": ("airplane", "hot-air balloon"), "style": ("photo", "sketch")}


def test_sketchy_other_augmentation_and_a_missing_one(sketchy):
    write_image(sketchy / "sketch/tx_000100000000/airplane/n02691156_58-1.png")
    layout = load_sketchy(sketchy, augmentation="tx_000100000000")
    assert layout.labels["path"].tolist() == ["photo/tx_000100000000/airplane/n02691156_58.jpg",
                                              "sketch/tx_000100000000/airplane/n02691156_58-1.png"]
    with pytest.raises(ValueError, match=r"tx_000000000110 is missing \(augmentations there: \['tx_000000000000', 'tx_000100000000'\]\)"):
        load_sketchy(sketchy, augmentation="tx_000000000110")
    with pytest.raises(ValueError, match="must be a folder name"):
        load_sketchy(sketchy, augmentation="../photo")


# ---- CheXpert -------------------------------------------------------------------------------------

def test_chexpert_frontal_views_paths_and_conditions(chexpert):
    layout = load_chexpert(chexpert)
    check_contract(layout)
    assert layout.root == chexpert / "valid"
    labels = layout.labels
    assert labels[["path", "patient", "study", "view"]].to_dict("list") == {
        "path": ["patient64541/study1/view1_frontal.jpg", "patient64542/study1/view1_frontal.jpg"],
        "patient": ["patient64541", "patient64542"],
        "study": ["patient64541/study1", "patient64542/study1"],
        "view": ["Frontal", "Frontal"],
    }
    assert list(labels.columns[4:]) == list(CHEXPERT_CONDITIONS) == list(layout.condition_columns)
    assert labels["Cardiomegaly"].tolist() == [True, False]  # 1.0, blank
    assert labels["Edema"].tolist() == [False, False]  # 0.0, -1.0 counted negative
    assert labels["Pleural Effusion"].tolist() == [False, True]  # -1.0, 1.0
    assert not labels["Fracture"].any()  # all blank
    assert (layout.object_column, layout.style_column, layout.group_column) == (None, None, None)
    assert layout.anchors == {"condition": CHEXPERT_CONDITIONS}


def test_chexpert_uncertain_positive_lateral_views_and_train_split(chexpert):
    layout = load_chexpert(chexpert, frontal_only=False, uncertain="positive")
    assert layout.labels["view"].tolist() == ["Frontal", "Lateral", "Frontal"]
    assert layout.labels["Edema"].tolist() == [False, False, True]
    assert layout.labels["Pleural Effusion"].tolist() == [True, True, True]
    train = load_chexpert(chexpert, split="train")
    assert train.root == chexpert / "train" and train.labels["path"].tolist() == ["patient00001/study1/view1_frontal.jpg"]
    assert train.labels["Edema"].tolist() == [True]


@pytest.mark.parametrize("options, message", [
    ({"uncertain": "ignore"}, r"uncertain='ignore' is not one of \['negative', 'positive'\]"),
    ({"split": "test"}, r"split='test' is not one of \['train', 'valid'\]"),
])
def test_chexpert_options_are_checked(chexpert, options, message):
    with pytest.raises(ValueError, match=message):
        load_chexpert(chexpert, **options)


def test_chexpert_bad_csvs_are_errors(chexpert):
    rows = [chexpert_row(*row) for row in CHEXPERT_VALID]
    write_text(chexpert / "valid.csv", [CHEXPERT_HEADER.replace(",Edema", ",Oedema")] + rows)
    with pytest.raises(ValueError, match=r"valid.csv lacks the columns \['Edema'\]"):
        load_chexpert(chexpert)
    write_text(chexpert / "valid.csv", [CHEXPERT_HEADER, rows[0].replace(",1.0,", ",yes,", 1)])
    with pytest.raises(ValueError, match=r"column 'Cardiomegaly' holds 'yes'"):
        load_chexpert(chexpert)
    write_text(chexpert / "valid.csv", [CHEXPERT_HEADER, rows[0].replace("/valid/", "/val/")])
    with pytest.raises(ValueError, match=r"has no valid/ folder in it"):
        load_chexpert(chexpert)
    write_text(chexpert / "valid.csv", [CHEXPERT_HEADER, rows[0].replace("view1_frontal", "view9_frontal")])
    with pytest.raises(ValueError, match=r"1 of 1 listed images are missing .*'patient64541/study1/view9_frontal.jpg'"):
        load_chexpert(chexpert)


# ---- every layout ---------------------------------------------------------------------------------

METADATA = {"imagenet-r": [], "cub-200": ["images.txt", "image_class_labels.txt", "classes.txt", "train_test_split.txt", "images"],
            "sketchy": ["photo/tx_000000000000", "sketch"], "chexpert": ["valid.csv", "valid"]}


@pytest.fixture
def roots(imagenet_r, cub, sketchy, chexpert) -> dict[str, Path]:
    return {"imagenet-r": imagenet_r, "cub-200": cub, "sketchy": sketchy, "chexpert": chexpert}


def test_load_layout_dispatches_and_checks_options(roots):
    assert list(LAYOUTS) == ["imagenet-r", "cub-200", "sketchy", "chexpert"]
    for kind, root in roots.items():
        assert load_layout(kind, str(root)).name == kind
    assert len(load_layout("cub-200", roots["cub-200"], split="all").labels) == len(CUB_IMAGES)
    with pytest.raises(ValueError, match=r"unknown layout 'imagenet'; choose from \['imagenet-r', 'cub-200', 'sketchy', 'chexpert'\]"):
        load_layout("imagenet", roots["imagenet-r"])
    with pytest.raises(ValueError, match=r"layout 'chexpert' takes the options \['split', 'frontal_only', 'uncertain'\], not \['frontal'\]"):
        load_layout("chexpert", roots["chexpert"], frontal=False)


@pytest.mark.parametrize("kind", list(LAYOUTS))
def test_a_root_that_is_not_a_folder_or_one_level_up_says_what_to_pass(kind, roots, tmp_path):
    with pytest.raises(ValueError, match=rf"{kind}: root .*nowhere' is not a folder; expected the"):
        load_layout(kind, tmp_path / "nowhere")
    with pytest.raises(ValueError, match=rf"{kind}: .*; {roots[kind]} exists: pass that folder as the root"):
        load_layout(kind, tmp_path)


@pytest.mark.parametrize("kind, missing", [(kind, name) for kind, names in METADATA.items() for name in names])
def test_missing_metadata_files_and_folders_are_named(kind, missing, roots):
    import shutil

    target = roots[kind] / missing
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    with pytest.raises(ValueError, match=rf"{kind}: .*{missing}\S* is missing[^;]*; expected the '[^']+' folder, holding"):
        load_layout(kind, roots[kind])


def test_an_empty_image_folder_is_an_error(tmp_path):
    (tmp_path / "imagenet-r").mkdir()
    with pytest.raises(ValueError, match="no images under"):
        load_imagenet_r(tmp_path / "imagenet-r")
