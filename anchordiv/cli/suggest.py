"""``anchordiv suggest``: the terms of a vocabulary an image or a text leans on
(:func:`anchordiv.suggest_anchors`), printed with their probabilities."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..vocabularies import MAX_TERMS
from .options import add_device_option, add_encoder_options, integer

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")


def add_parser(commands) -> argparse.ArgumentParser:
    suggest = commands.add_parser("suggest", help="the terms of a vocabulary an image or a text leans on, with "
                                                  "their probabilities (the model's zero-shot softmax over the terms)")
    suggest.add_argument("query", metavar="IMAGE_OR_TEXT",
                         help="an image file (an existing path), or else a text, e.g. 'a dog in watercolor'")
    suggest.add_argument("--vocabulary", help="a vocabulary name (see anchordiv.list_vocabularies()) or a text file "
                                              "with one term per line (default: builtin-world for the built-in "
                                              "model, imagenet-1k for others)")
    suggest.add_argument("--k", type=integer(1, MAX_TERMS), default=10,
                         help=f"how many terms to print (default 10; a vocabulary has at most {MAX_TERMS:,})")
    add_encoder_options(suggest)
    add_device_option(suggest)
    suggest.set_defaults(handler=run)
    return suggest


def run(args: argparse.Namespace) -> int:
    from .. import load_vocabulary, suggest_anchors
    from ..explorer.vocabulary import default_vocabulary
    from .checks import check_device
    from .fetch_model import load_with_progress

    # What can be checked is, before loading a model, which can take a while.
    query_is_image = _is_image(args.query)
    if args.vocabulary is None:
        vocabulary = default_vocabulary(args.encoder)  # the explorer's default for that model
        terms = load_vocabulary(vocabulary)
    else:
        vocabulary, terms = args.vocabulary, _given_terms(args.vocabulary)
    check_device(args)
    encoder = load_with_progress(args.encoder, args.pretrained, args.device, args.allow_download)
    query = _image_embedding(encoder, args.query) if query_is_image else args.query
    chosen, probabilities = suggest_anchors(encoder, query, terms, k=args.k)
    what = f"the image {args.query}" if query_is_image else f"the text {args.query!r}"
    print(f"anchordiv suggest: {what} under {encoder.name}, {len(terms):,} terms of {vocabulary} "
          f"(scale {encoder.logit_scale:g})")
    width = max(len(term) for term in chosen)
    for rank, (term, probability) in enumerate(zip(chosen, probabilities), start=1):
        print(f"{rank:>3}  {term:<{width}}  {probability:.4f}")
    return 0


def _given_terms(vocabulary: str) -> list[str]:
    """The terms of ``--vocabulary``: a refusal names the option and the name or file given, and says
    what the option takes (the library's own words name neither the option nor, for an empty file,
    the file)."""
    from .. import list_vocabularies, load_vocabulary

    try:
        terms = load_vocabulary(vocabulary)
    except ValueError as error:
        raise ValueError(f"--vocabulary: {error}") from None
    if not terms:
        raise ValueError(f"--vocabulary {vocabulary!r} has no terms (the file is empty or every line is blank); give "
                         f"a text file with one term per line, or one of {', '.join(list_vocabularies())}")
    return terms


def _is_image(query: str) -> bool:
    """An existing file is an image; a path-like text ending in an image suffix that names no file is
    refused (most likely a mistyped path), and any other text is a text query."""
    if not query.strip():
        raise ValueError("IMAGE_OR_TEXT is empty; give an image file or a text")
    path = Path(query).expanduser()
    if path.is_file():
        return True
    if path.suffix.lower() in IMAGE_SUFFIXES and "\n" not in query:
        raise ValueError(f"{query!r} looks like an image path but is not a file; give an existing image file, "
                         "or a text without an image file ending")
    return False


def _image_embedding(encoder, path: str):
    """The unit embedding ``(d,)`` of the image at ``path``."""
    from ..images import load_image

    return encoder.encode_images([load_image(Path(path).expanduser())])[0]
