"""``anchordiv reproduce``: the paper's experiments on the built-in world, a published dataset's
layout or a folder of images, written as a report (Markdown, PNG, CSV)."""
from __future__ import annotations

import argparse
import dataclasses

from ..cache import cache_dir
from .checks import anchor_file, check_device, check_input, check_labels, check_output_folder
from .options import SCALE, SEED, add_device_option, add_encoder_options, add_labels_option, labels_for
from .options import integer, option_name
from .logs import progress_bar
from .output import warn_unlabelled

ROLES = ("object", "style", "prior")
FOLDER_ONLY = ("labels", "object_column", "style_column", "group_column", "object_anchors", "style_anchors",
               "prior_anchors")


def add_parser(commands) -> argparse.ArgumentParser:
    from ..datasets.layouts import LAYOUTS

    reproduce = commands.add_parser("reproduce", help="the paper's experiments, written as a report (Markdown, PNG, CSV)")
    reproduce.add_argument("--quick", action="store_true", help="smaller sweeps and samples (about a minute on 2 cores once the world is embedded)")
    reproduce.add_argument("--out", default="reports", help="folder for report.md, its figures and tables (default reports/)")
    add_encoder_options(reproduce)
    add_device_option(reproduce)
    reproduce.add_argument("--layout", choices=list(LAYOUTS), help="a published dataset's layout under --root")
    reproduce.add_argument("--root", help="the dataset's folder, for --layout")
    reproduce.add_argument("--folder", help="instead: a folder of images (subfolders are object labels)")
    add_labels_option(reproduce, "with --folder: ")
    reproduce.add_argument("--object-column", dest="object_column", help="with --folder: the object label column")
    reproduce.add_argument("--style-column", dest="style_column", help="with --folder: the style label column")
    reproduce.add_argument("--group-column", dest="group_column", help="with --folder: groups for the condition table")
    for role in ROLES:
        reproduce.add_argument(f"--{role}-anchors", dest=f"{role}_anchors",
                               help=f"with --folder: text file of {role} anchors, one per line")
    reproduce.add_argument("--queries", type=integer(1, 10**6), help="number of queries sampled from the gallery")
    reproduce.add_argument("--scale", type=SCALE, help="logit scale s of the anchor models (default 10)")
    reproduce.add_argument("--seed", type=SEED, help="seed of every random draw (default 0)")
    reproduce.set_defaults(handler=run)
    return reproduce


def run(args: argparse.Namespace) -> int:
    from .fetch_model import load_with_progress
    from ..reproduce import Settings, run_reproduction

    settings = Settings.quick() if args.quick else Settings.full()
    overrides = {name: getattr(args, name) for name in ("queries", "scale", "seed") if getattr(args, name) is not None}
    args.settings = dataclasses.replace(settings, **overrides).validate(labels_for(args))
    anchors, layout = _checked_inputs(args)
    encoder = load_with_progress(args.encoder, args.pretrained, args.device, args.allow_download)
    study = _study(args, encoder, anchors, layout)
    print(f"anchordiv reproduce ({'quick' if args.quick else 'full'}): {study.name}, {len(study.gallery):,} images, "
          f"{encoder.name}", flush=True)
    report = run_reproduction(study, args.out, args.settings)
    print(f"wrote {report}")
    return 0


def _checked_inputs(args: argparse.Namespace):
    """Everything that can be checked before loading a model (which can take a while), checked;
    returns the anchor texts read from the ``--*-anchors`` files, by role (``None``: no file), and
    the ``--layout``."""
    _check_sources(args)
    check_output_folder(args.out, "--out")
    anchors = {role: anchor_file(args, option_name(f"{role}_anchors")) for role in ROLES}
    layout = None
    if args.layout:
        from ..datasets.layouts import load_layout

        layout = load_layout(args.layout, args.root)
    check_device(args)
    cache_dir(writable=True)
    return anchors, layout


def _check_sources(args: argparse.Namespace) -> None:
    """The options name one source of images, and it exists."""
    if args.layout and args.folder:
        raise ValueError("--layout and --folder both name the images; give one of them")
    if args.layout and not args.root:
        raise ValueError("--layout needs --root, the dataset's folder")
    if args.root and not args.layout:
        raise ValueError("--root is the folder of a --layout; add --layout (or use --folder for a plain image folder)")
    given = [option_name(name) for name in FOLDER_ONLY if getattr(args, name) is not None]
    if given and not args.folder:
        raise ValueError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} only with --folder; "
                         "add --folder or drop them")
    check_input(args.root, "--root", "the dataset's folder", folder=True)
    check_input(args.folder, "--folder", "a folder of images (subfolders are object labels)", folder=True)
    check_labels(args)
    if args.folder:
        _check_label_columns(args)


def _check_label_columns(args: argparse.Namespace) -> None:
    """Every ``--*-column`` names a column the folder's labels will have."""
    from ..gallery import label_columns

    columns = label_columns(args.labels, "--labels")
    for name in ("object_column", "style_column", "group_column"):
        column = getattr(args, name)
        if column is not None and column not in columns:
            where = "the --labels CSV gives" if args.labels else "without --labels the labels are"
            raise ValueError(f"{option_name(name)} {column!r} is not a label column; {where} {columns}. Give one of "
                             "them" + ("" if args.labels else ", or a --labels CSV with more columns"))


def _study(args: argparse.Namespace, encoder, anchors: dict[str, tuple[str, ...] | None], layout):
    """The study the options name: a dataset layout, an image folder, or the built-in world."""
    from ..reproduce import layout_study, make_study, world_study

    if layout is not None:
        return layout_study(layout, encoder)
    if not args.folder:
        with progress_bar("emoji world") as progress:
            return world_study(encoder, limit=args.settings.world_limit, progress=progress)
    from ..gallery import folder_gallery

    gallery = folder_gallery(args.folder, encoder, labels_csv=args.labels)
    object_column = args.object_column or gallery.object_column
    style_column = args.style_column or gallery.style_column
    labels = gallery.labels
    warn_unlabelled(args, gallery.unlabelled)
    defaults = {"object": labels[object_column], "style": labels[style_column] if style_column else (), "prior": ()}
    texts = {role: defaults[role] if anchors[role] is None else anchors[role] for role in defaults}
    return make_study(str(args.folder), gallery, encoder, object_column, style_column,
                      object_texts=texts["object"], style_texts=texts["style"], prior_texts=texts["prior"],
                      group_column=args.group_column)
