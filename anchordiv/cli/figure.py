"""``anchordiv figure``: queries (rows) x geometries (columns) of top-k neighbours as PNG, PDF or
SVG (the paper's Figs. 1 and 8), drawn as the explorer's Compare page draws them."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from ..cache import atomic_write
from .checks import anchor_file, check_device, check_input, check_output_file
from .logs import progress_bar
from ..figure.limits import PNG_SIDE
from .options import SCALE, add_device_option, add_encoder_options, add_world_options, integer

ANCHOR_SETS = (("a", "A (default: the gallery's object names)", "Gallery object names"),
               ("b", "B (default: the gallery's styles)", "Gallery styles"))
# Each --max-NAME option: what it limits, and the most it may be raised to. The ceilings are far past
# any figure worth drawing (a million thumbnails take hours); pixels stop where a PNG's sides do.
LIMITS = (("rows", "query rows", 1000), ("columns", "geometry columns", 100), ("k", "neighbours per cell", 1000),
          ("neighbours", "neighbours in all (rows x columns x k)", 10**6),
          ("geometries", "anchor geometries to fit (distinct encoders, anchor models and s=)", 100),
          ("encoders", "encoders named by columns' encoder=SPEC (each loaded and embedding the world)", 20),
          ("dpi", "dpi of a PNG", 10**6), ("pixels", "pixels of a PNG (width x height)", PNG_SIDE**2))


def add_anchor_set_options(parser: argparse.ArgumentParser) -> None:
    """Per anchor set A and B: ``--anchors-a FILE`` or ``--preset-a NAME`` (one of the two)."""
    for name, role, preset in ANCHOR_SETS:
        sets = parser.add_mutually_exclusive_group()
        sets.add_argument(f"--anchors-{name}", dest=f"anchors_{name}",
                          help=f"text file of anchor set {role}, one per line")
        sets.add_argument(f"--preset-{name}", dest=f"preset_{name}", default=preset,
                          help=f"a preset for set {name.upper()} (default {preset!r})")


def add_parser(commands) -> argparse.ArgumentParser:
    from ..explorer import WEIGHTING_HELP
    from ..figure import DEFAULT_LIMITS
    from ..models import list_anchor_models
    from ..prompts import AUTO, NAMED_SETS, PHOTO_TEMPLATE

    figure = commands.add_parser(
        "figure", help="queries (rows) x geometries (columns) of top-k neighbours as PNG, PDF or SVG (paper Figs. 1, 8)")
    figure.add_argument("--queries", nargs="+", required=True, metavar="Q",
                        help="rows: #ID, NAME or name:NAME (first caption containing it), text:TEXT, random, "
                             "random:SEED, image:PATH")
    figure.add_argument("--geometries", nargs="+", required=True, metavar="G",
                        help="columns: cosine, iti, A, B, 'mix p=0.3', each anchor column with optional "
                             "model=KIND s=SCALE (mix: weighting=NAME), any column with encoder=SPEC [pretrained=TAG] "
                             "to rank the same images embedded by another encoder (e.g. 'cosine "
                             "encoder=open_clip:ViT-B-32 pretrained=laion2b_s34b_b79k'), quoted when it has spaces")
    figure.add_argument("--out", required=True, help="the figure's file: .png, .pdf or .svg")
    add_anchor_set_options(figure)
    figure.add_argument("--prior-anchors", dest="prior_anchors",
                        help="text file of prior anchors, one per line, for the posterior kinds")
    figure.add_argument("--templates", default=AUTO, metavar="T",
                        help="prompt templates of both anchor sets: auto (the model's: none for builtin, "
                             f"'{PHOTO_TEMPLATE}' for open_clip), {', '.join(NAMED_SETS)}, "
                             "or a text file of your own, one template with {} per line")
    for name in ("a", "b"):
        figure.add_argument(f"--templates-{name}", dest=f"templates_{name}", metavar="T",
                            help=f"prompt templates of set {name.upper()} only, as --templates")
    figure.add_argument("--kind", choices=list_anchor_models(), default="softmax",
                        help="anchor model of the anchor columns without model= (default softmax)")
    figure.add_argument("--scale", type=SCALE, default=10.0, help="logit scale s of columns without s= (default 10)")
    figure.add_argument("--weighting", choices=list(WEIGHTING_HELP), default="calibrated",
                        help="weights of A and B in mix columns without weighting= (default calibrated)")
    figure.add_argument("--reverse", action="store_true", help="rank by KL(p_neighbour || p_query)")
    # -k and --dpi go up to their --max-* ceilings; past their limits, the figure's check names the --max-* to raise.
    figure.add_argument("-k", "--k", type=integer(1, 1000), default=5, dest="k", help="neighbours per cell (default 5)")
    add_world_options(figure, "--split", "--limit")
    figure.add_argument("--dpi", type=integer(1, 10**6), default=200, help="resolution of a PNG (default 200)")
    for name, what, ceiling in LIMITS:
        default = getattr(DEFAULT_LIMITS, name)
        figure.add_argument(f"--max-{name}", type=integer(1, ceiling), default=default, dest=f"max_{name}",
                            help=f"refuse a figure with more {what} (default {default:,}, at most {ceiling:,})")
    add_encoder_options(figure)
    add_device_option(figure)
    figure.set_defaults(handler=run)
    return figure


def run(args: argparse.Namespace) -> int:
    from .fetch_model import load_with_progress
    from ..explorer import GeometrySpec
    from ..figure import compare, render_figure
    from ..gallery import world_gallery
    from ..prompts import AUTO, default_choice, encode_anchors, template_choice

    form, rows, columns, images, files, limits = _checked_inputs(args)
    encoder = load_with_progress(args.encoder, args.pretrained, args.device, args.allow_download)
    with progress_bar("emoji world") as progress:
        gallery = world_gallery(encoder, split=args.split, limit=args.limit, progress=progress)
    texts_a, texts_b = (files[name] or preset_anchors(gallery, getattr(args, f"preset_{name}"), f"--preset-{name}")
                        for name in ("a", "b"))
    spec = GeometrySpec(kind=args.kind, scale=args.scale, reverse=args.reverse)
    print(f"anchordiv figure: {len(rows)} row(s) x {len(columns)} column(s), top-{args.k}, {gallery.description}, "
          f"{encoder.name}", flush=True)
    # "auto" stays unresolved: each encoder (the figure's, a column's) resolves it to its own default.
    templates = [AUTO if choice == AUTO else template_choice(choice, text)
                 for choice, text in (files["templates_a"], files["templates_b"])]
    for name, texts, choice in zip("AB", (texts_a, texts_b), templates):
        choice = default_choice(encoder) if choice == AUTO else choice
        if len(choice.templates) > 1:  # minutes on a CPU for a large set: shown here, then read from the text cache
            with progress_bar(f"anchors {name}") as progress:
                encode_anchors(encoder, texts, choice, progress)
    result = compare(gallery, encoder, rows, columns, texts_a, texts_b, args.k, spec, args.weighting,
                     prior_texts=files["prior"] or (), images=images, limits=limits, templates=templates,
                     model_for=lambda spec, pretrained: _column_model(args, spec, pretrained))
    data = render_figure(result, form, dpi=args.dpi, limits=limits)
    atomic_write(Path(args.out), lambda handle: handle.write(data))
    print(f"wrote {args.out}")
    return 0


def _checked_inputs(args: argparse.Namespace):
    """Everything ``figure`` can check before loading a model, checked: the output's format (from
    its suffix) and folder, the query and geometry specs, the figure's size against the
    ``--max-*`` limits, the image files of ``image:`` rows (read), the anchor files (read;
    ``None`` where a preset is used) and each set's templates (``(name, own templates)``, files read)."""
    from ..explorer import GeometrySpec
    from ..figure import (FORMATS, FigureLimits, check_figure_request, fitted_geometries, named_encoders,
                          parse_geometry_column, parse_query_row)

    form = Path(args.out).suffix.lower().lstrip(".")
    if form not in FORMATS:
        raise ValueError(f"--out {args.out!r} must end in .png, .pdf or .svg (the figure's format)")
    check_output_file(args.out, "--out")
    rows = _parsed(args.queries, parse_query_row, "--queries")
    columns = _parsed(args.geometries, parse_geometry_column, "--geometries")
    limits = FigureLimits(**{name: getattr(args, f"max_{name}") for name, *_ in LIMITS})
    spec = GeometrySpec(kind=args.kind, scale=args.scale)
    check_figure_request(len(rows), len(columns), args.k, limits, dpi=args.dpi if form == "png" else None,
                         n_geometries=fitted_geometries(columns, spec), n_encoders=named_encoders(columns))
    images = {}
    for row in rows:
        if row.kind == "upload":
            raise ValueError(f"--queries {str(row)!r}: upload: rows belong to the app; give the file as image:PATH")
        if row.kind == "image":
            check_input(row.value, "--queries image:", "an image file (PNG, JPEG or WebP)")
            images[row.value] = Path(row.value).read_bytes()
    files = {name: anchor_file(args, option) for name, option in (
        ("a", "--anchors-a"), ("b", "--anchors-b"), ("prior", "--prior-anchors"))}
    for name in ("a", "b"):
        option = f"--templates-{name}" if getattr(args, f"templates_{name}") else "--templates"
        files[f"templates_{name}"] = _templates(getattr(args, f"templates_{name}") or args.templates, option)
    check_device(args)
    return form, rows, columns, images, files, limits


def _parsed(texts: list[str], parse: Callable, option: str) -> list:
    """Each of ``texts`` through ``parse``; a bad one is named with ``option`` (an encoder's advice in
    a column's words, :func:`column_words`)."""
    from ..encoders.advice import said

    try:
        return [parse(text) for text in texts]
    except ValueError as error:
        raise ValueError(f"{option}: {said(error, column_words)}") from None


def column_words(argument) -> str:
    """An encoder's argument as a ``--geometries`` column writes it (``pretrained=TAG``, as typed),
    a switch as this command's option (``--allow-download``): for
    :class:`~anchordiv.encoders.advice.AdvisedError`."""
    from ..encoders.advice import option_words

    return option_words(argument) if argument.value is None else f"{argument.name}={argument.value}"


def _templates(value: str, option: str) -> tuple[str, str]:
    """``(name, own templates)`` of ``option``'s ``value``: a set's name (or auto), else a text file
    of templates, one per line (read and checked; the text for
    :func:`~anchordiv.prompts.template_choice`)."""
    from ..prompts import AUTO, CUSTOM, NAMED_SETS, parse_templates

    if value == AUTO or value in NAMED_SETS:
        return value, ""
    check_input(value, option, f"one of {', '.join((AUTO, *NAMED_SETS))}, or a text file with one template per line")
    try:
        text = Path(value).read_text(encoding="utf-8")
        parse_templates(text)
    except (OSError, UnicodeError, ValueError) as error:
        raise ValueError(f"{option} {value!r}: {error}") from None
    return CUSTOM, text


def _column_model(args: argparse.Namespace, spec: str, pretrained: str | None):
    """The world of the figure embedded by the encoder a column names (``encoder=SPEC``), as
    :class:`~anchordiv.figure.ColumnModel`, with a progress bar while it embeds."""
    from .fetch_model import load_with_progress
    from ..encoders.advice import AdvisedError
    from ..figure import ColumnModel
    from ..gallery import world_gallery

    try:
        encoder = load_with_progress(spec, pretrained, args.device, args.allow_download)
    except AdvisedError as error:  # the column's encoder=, not --encoder: its pretrained= in the column's words
        named = f"encoder={spec}" + (f" pretrained={pretrained}" if pretrained else "")
        raise ValueError(f"--geometries column with {named}: {error.say(column_words)}") from None
    with progress_bar(f"emoji world, {encoder.name}") as progress:
        return ColumnModel(encoder, world_gallery(encoder, split=args.split, limit=args.limit, progress=progress))


def preset_anchors(gallery, name: str, option: str) -> tuple[str, ...]:
    """The anchors of preset ``name`` for ``gallery``."""
    from ..explorer import anchor_presets

    presets = anchor_presets(gallery)
    if name not in presets:
        raise ValueError(f"{option} {name!r} is not a preset; choose one of {', '.join(map(repr, presets))}")
    return presets[name]
