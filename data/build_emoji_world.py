"""Recipe for ``data/emoji``: fetch two emoji-datasource packages with ``npm pack`` and pack the gallery.

Run once by a developer, from the repository root, with the project's environment::

    .venv/bin/python data/build_emoji_world.py

It needs ``npm`` and registry access; the output (``data/emoji``) is committed, so users never run it.
Selection (see ``data/emoji/README.md`` for the reasons): base emoji only (skin-tone variants
live in a separate field of emoji.json and are never read), no category "Component", no
country or subdivision flags, and only emoji for which both vendors draw their own image.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a plain script, so the package may not be installed

from anchordiv.datasets.shipped import CELL, DEFAULT_DATA_DIR, VENDORS, write_shipped  # noqa: E402

VERSION = "16.0.0"
PACKAGES = {vendor: f"emoji-datasource-{vendor}@{VERSION}" for vendor in VENDORS}
# Full licence texts (the emoji packages only link to them), from a CC0 package of SPDX texts.
LICENCE_PACKAGE = "spdx-license-list@6.10.0"
LICENCES = {"google": "Apache-2.0", "twitter": "CC-BY-4.0"}
DROPPED_CATEGORIES = {"Component"}
DROPPED_SUBCATEGORIES = {"country-flag", "subdivision-flag"}
# Hash of the id, not of the list position, so adding emoji in a later version never moves old ones.
HELDOUT_PERCENT = 25
SPLIT_SALT = "anchordiv-emoji-world-split"


def npm_pack(spec: str, workdir: Path) -> tuple[tarfile.TarFile, dict]:
    """Download ``spec`` with ``npm pack`` into ``workdir``; return the open tarball and its provenance."""
    result = subprocess.run(["npm", "pack", spec, "--json"], cwd=workdir, check=True, capture_output=True, text=True)
    info = json.loads(result.stdout)[0]
    path = workdir / info["filename"]
    provenance = {
        "npm": spec,
        "tarball_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "npm_integrity": info["integrity"],
    }
    return tarfile.open(path), provenance


def member_bytes(tar: tarfile.TarFile, name: str) -> bytes:
    """Bytes of ``package/<name>`` in an npm tarball."""
    handle = tar.extractfile(f"package/{name}")
    if handle is None:
        raise FileNotFoundError(f"package/{name} is not a regular file in the tarball")
    return handle.read()


def heldout(emoji_id: str) -> bool:
    """Whether ``emoji_id`` is held out of training: about HELDOUT_PERCENT percent of ids, fixed forever."""
    value = int(hashlib.sha256(f"{SPLIT_SALT}:{emoji_id}".encode()).hexdigest()[:8], 16)
    return value % 100 < HELDOUT_PERCENT


def select(records: list[dict]) -> pd.DataFrame:
    """The kept emoji of emoji.json ``records`` as index rows (plus the image file name), in emoji.json's sort order."""
    kept = [
        record for record in records
        if record["category"] not in DROPPED_CATEGORIES
        and record["subcategory"] not in DROPPED_SUBCATEGORIES
        and all(record[f"has_img_{vendor}"] for vendor in VENDORS)
    ]
    kept.sort(key=lambda record: record["sort_order"])
    frame = pd.DataFrame({
        "emoji_id": [record["unified"] for record in kept],
        "name": [record["name"].lower() for record in kept],
        "short_name": [record["short_name"] for record in kept],
        "subcategory": [record["subcategory"] for record in kept],
        "category": [record["category"] for record in kept],
        "split": ["heldout" if heldout(record["unified"]) else "train" for record in kept],
        "image": [record["image"] for record in kept],
    })
    # Unicode gives "man in tuxedo" to both U+1F935 and its male ZWJ form; names must be
    # unique to work as text anchors, so clashing rows fall back to their (distinct) short names.
    clash = frame["name"].duplicated(keep=False)
    frame.loc[clash, "name"] = frame.loc[clash, "short_name"].str.replace(r"[_-]", " ", regex=True)
    assert frame["name"].is_unique and frame["emoji_id"].is_unique
    return frame


def load_sprite(tar: tarfile.TarFile, vendor: str, image: str) -> np.ndarray:
    """The vendor's 64 px image as uint8 (CELL, CELL, 4) RGBA (a few files are palette or LA PNGs)."""
    with Image.open(io.BytesIO(member_bytes(tar, f"img/{vendor}/64/{image}"))) as sprite:
        rgba = sprite.convert("RGBA")
    if rgba.size != (CELL, CELL):
        rgba = rgba.resize((CELL, CELL), Image.LANCZOS)
    return np.asarray(rgba)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DATA_DIR, help="output folder (default: data/emoji)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        tars, sources = {}, {}
        for vendor, spec in PACKAGES.items():
            tars[vendor], sources[vendor] = npm_pack(spec, workdir)
        licence_tar, sources["licence_texts"] = npm_pack(LICENCE_PACKAGE, workdir)

        catalogues = {vendor: member_bytes(tar, "emoji.json") for vendor, tar in tars.items()}
        if len(set(catalogues.values())) != 1:
            raise SystemExit("the vendor packages disagree on emoji.json; pin matching versions")
        frame = select(json.loads(catalogues[VENDORS[0]]))
        sprites = {vendor: np.stack([load_sprite(tars[vendor], vendor, image) for image in frame["image"]]) for vendor in VENDORS}

        licence_dir = args.out / "LICENSES"
        licence_dir.mkdir(parents=True, exist_ok=True)
        (licence_dir / "emoji-datasource-MIT.txt").write_bytes(member_bytes(tars[VENDORS[0]], "LICENSE"))
        for spdx in sorted(set(LICENCES.values())):
            text = json.loads(member_bytes(licence_tar, f"licenses/{spdx}.json"))["licenseText"]
            (licence_dir / f"{spdx}.txt").write_text(text.rstrip() + "\n")

    provenance = {
        "sources": sources,
        "image_licences": LICENCES,
        "metadata_licence": "MIT (emoji-datasource, Cal Henderson)",
        "selection": {
            "dropped_categories": sorted(DROPPED_CATEGORIES),
            "dropped_subcategories": sorted(DROPPED_SUBCATEGORIES),
            "requires_images_from": list(VENDORS),
            "skin_tone_variants": "excluded",
        },
        "split": {"rule": f"sha256('{SPLIT_SALT}:' + emoji_id)[:8] as int % 100 < {HELDOUT_PERCENT} -> heldout"},
    }
    write_shipped(args.out, frame, sprites, provenance)
    counts = frame["split"].value_counts().to_dict()
    print(f"wrote {len(frame)} emoji to {args.out} ({counts})")


if __name__ == "__main__":
    main()
