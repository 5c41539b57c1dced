"""``anchordiv sweep``: one query's neighbours as ``p`` moves from set B to set A, as an animated
GIF and a strip PNG (the paper's Fig. 3, right), from the exact p path the explorer plays."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..cache import atomic_write
from .checks import anchor_file, check_device, check_output_file
from .figure import add_anchor_set_options, preset_anchors
from .logs import progress_bar
from .options import FRACTION, SCALE, add_device_option, add_encoder_options, add_world_options, integer


def add_parser(commands) -> argparse.ArgumentParser:
    from ..explorer import WEIGHTING_HELP
    from ..explorer.sweep_files import MAX_STRIP_ROWS, MAX_SWEEP_K
    from ..models import anchor_model_kind, list_anchor_models

    sweep = commands.add_parser("sweep", help="one query's neighbours as p moves from B to A: an animated GIF and a "
                                              "strip PNG (paper Fig. 3, right)")
    sweep.add_argument("--query", required=True, metavar="Q",
                       help="#ID, NAME or name:NAME (first caption containing it), text:TEXT, random, random:SEED")
    sweep.add_argument("--gif", help="the animation's file (.gif): p from 0 to 1 and back")
    sweep.add_argument("--strip", help="the strip's file (.png): one row of neighbours per ranking, or per p of --p")
    sweep.add_argument("--p", nargs="+", type=FRACTION, metavar="P",
                       help=f"the strip's rows, each from 0 to 1, at most {MAX_STRIP_ROWS} (default: one per change "
                            "of the top k's images, the rankings the GIF and the explorer's Play show)")
    add_anchor_set_options(sweep)
    # The posterior kinds need a prior anchor set, which a sweep has no option for.
    sweep.add_argument("--kind", choices=[kind for kind in list_anchor_models() if not anchor_model_kind(kind).needs_prior],
                       default="softmax", help="anchor model (default softmax; the posterior kinds need a prior set: "
                                               "see the figure command's --prior-anchors)")
    sweep.add_argument("--scale", type=SCALE, default=10.0, help="logit scale s (default 10)")
    sweep.add_argument("--weighting", choices=list(WEIGHTING_HELP), default="calibrated",
                       help="how p becomes the weights of A and B (default calibrated)")
    sweep.add_argument("-k", "--k", type=integer(1, MAX_SWEEP_K), default=5, dest="k",
                       help=f"neighbours per row or frame (default 5, at most {MAX_SWEEP_K})")
    add_world_options(sweep, "--split", "--limit")
    add_encoder_options(sweep)
    add_device_option(sweep)
    sweep.set_defaults(handler=run)
    return sweep


def run(args: argparse.Namespace) -> int:
    from .fetch_model import load_with_progress
    from ..explorer import ExplorerGeometry, GeometrySpec
    from ..explorer.sweep_files import MAX_STRIP_ROWS, sweep_gif, sweep_strip_png
    from ..figure import parse_query_row, resolve_queries
    from ..gallery import world_gallery
    from ..prompts import default_choice, encode_anchors

    row, files = _checked_inputs(args, MAX_STRIP_ROWS, parse_query_row)
    encoder = load_with_progress(args.encoder, args.pretrained, args.device, args.allow_download)
    with progress_bar("emoji world") as progress:
        gallery = world_gallery(encoder, split=args.split, limit=args.limit, progress=progress)
    texts = [files[name] or preset_anchors(gallery, getattr(args, f"preset_{name}"), f"--preset-{name}")
             for name in ("a", "b")]
    [query] = resolve_queries([row], gallery, encoder)
    anchors = [encode_anchors(encoder, set_texts, default_choice(encoder)) for set_texts in texts]
    geometry = ExplorerGeometry(gallery.embeddings, anchors, texts, GeometrySpec(kind=args.kind, scale=args.scale),
                                device=encoder.device)
    path = geometry.p_path(query.vector, args.k, query.gallery_id, args.weighting)
    title = f"Query: {query.caption}"
    print(f"anchordiv sweep: {query.caption}, top-{args.k}, A: {len(texts[0])} anchors, B: {len(texts[1])} anchors, "
          f"{gallery.description}, {encoder.name}", flush=True)
    def images(ids: list[int]) -> list:
        return [gallery.image(item) for item in ids]

    for target, draw in ((args.gif, lambda: sweep_gif(path, images, gallery.caption, k=args.k, title=title)),
                         (args.strip, lambda: sweep_strip_png(path, images, gallery.caption, k=args.k,
                                                              p_values=args.p, title=title))):
        if target:
            data = draw()
            atomic_write(Path(target), lambda handle: handle.write(data))
            print(f"wrote {target}")
    return 0


def _checked_inputs(args: argparse.Namespace, most_rows: int, parse_row):
    """What can be checked before a model loads: the files to write (at least one, each with its
    suffix), the number of the strip's p values (each value and -k are bounded by their parser), the
    query (not an image or an upload) and the anchor files."""
    if not args.gif and not args.strip:
        raise ValueError("give --gif FILE.gif, --strip FILE.png or both: the files to write")
    for option, target, suffix in (("--gif", args.gif, ".gif"), ("--strip", args.strip, ".png")):
        if target and Path(target).suffix.lower() != suffix:
            raise ValueError(f"{option} {target!r} must end in {suffix}")
        check_output_file(target, option)
    if args.p is not None and not args.strip:
        raise ValueError("--p sets the rows of the strip; add --strip FILE.png, or drop --p")
    if args.p is not None and len(args.p) > most_rows:
        raise ValueError(f"--p has {len(args.p):,} values, and a strip has at most {most_rows} rows; give "
                         f"{most_rows} or fewer")
    try:
        row = parse_row(args.query)
    except ValueError as error:
        raise ValueError(f"--query: {error}") from None
    if row.kind in ("image", "upload"):
        raise ValueError(f"--query {args.query!r}: give a gallery image (#ID, a name, random) or text:TEXT")
    files = {name: anchor_file(args, f"--anchors-{name}") for name in ("a", "b")}
    check_device(args)
    return row, files
