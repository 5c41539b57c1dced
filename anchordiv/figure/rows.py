"""A figure's query rows as text (:class:`QueryRow`: ``#12``, ``cat``, ``text:a dog in
watercolor``, ``random:7``, ``image:PATH``, ``upload:NAME``; :func:`parse_query_row`), and each
resolved against a gallery into a :class:`Query` with its embedding (:func:`resolve_queries`)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from ..explorer.query import query_image_from_upload

if TYPE_CHECKING:
    from PIL import Image

    from ..gallery import Gallery


QUERY_KINDS = ("id", "name", "text", "random", "image", "upload")


_PREFIXED = ("name", "text", "image", "upload")


ROW_EXAMPLE = "e.g. '#12', 'cat', 'name:cat', 'text:a dog in watercolor', 'random' or 'random:7'"


@dataclass(frozen=True)
class QueryRow:
    """One row of the figure, as text: a gallery image by id (``"id"``, ``value`` the id) or by name
    (``"name"``: the best match, :meth:`~anchordiv.gallery.Gallery.find`), a text query (``"text"``), a
    random gallery image (``"random"``, ``value`` the seed or ``None``), or an image whose bytes the caller
    holds (``"image"``: a file the command line reads; ``"upload"``: a file uploaded to the app).

    Text form: :func:`parse_query_row`; ``str()`` gives it back.
    """

    kind: str
    value: str | int | None = None

    def __post_init__(self) -> None:
        if self.kind not in QUERY_KINDS:
            raise ValueError(f"unknown query kind {self.kind!r}; use one of {', '.join(QUERY_KINDS)}")
        if self.kind in ("id", "random") and self.value is not None and (
                isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < 0):
            raise ValueError(f"a {self.kind} query needs a whole number >= 0, got {self.value!r} ({ROW_EXAMPLE})")
        if self.kind == "id" and self.value is None:
            raise ValueError(f"a gallery id query needs the id, e.g. '#12' ({ROW_EXAMPLE})")
        if self.kind in _PREFIXED and not (isinstance(self.value, str) and self.value.strip()):
            raise ValueError(f"an empty {self.kind} query; write something after '{self.kind}:' ({ROW_EXAMPLE})")
        if self.kind in _PREFIXED:  # as the text form reads back: words single-spaced, a path only stripped
            kept = self.value.strip() if self.kind in ("image", "upload") else " ".join(self.value.split())
            object.__setattr__(self, "value", kept)

    def __str__(self) -> str:
        if self.kind == "id":
            return f"#{self.value}"
        if self.kind == "random":
            return "random" if self.value is None else f"random:{self.value}"
        return f"{self.kind}:{self.value}"


def parse_query_row(text: str) -> QueryRow:
    """A :class:`QueryRow` from its text: ``#ID``, ``name:NAME`` (or just ``NAME``), ``text:TEXT``,
    ``random`` or ``random:SEED``, ``image:PATH``, ``upload:NAME``. In names and texts a run of
    whitespace counts as one space. Raises ``ValueError`` naming the bad part and the fix."""
    spec = str(text).strip()
    if not spec:
        raise ValueError(f"empty query; write one, {ROW_EXAMPLE}")
    if spec.startswith("#"):
        if not spec[1:].isdecimal():
            raise ValueError(f"query {text!r}: after '#' comes a gallery id (a whole number), e.g. '#12'")
        return QueryRow("id", int(spec[1:]))
    if spec.lower() == "random":
        return QueryRow("random")
    prefix, colon, rest = spec.partition(":")
    if colon and prefix.lower() == "random":
        if not rest.strip().isdecimal():
            raise ValueError(f"query {text!r}: after 'random:' comes a seed (a whole number), e.g. 'random:7'")
        return QueryRow("random", int(rest))
    if colon and prefix.lower() in _PREFIXED:
        return QueryRow(prefix.lower(), rest)
    return QueryRow("name", spec)  # emoji names hold colons too ("flag: Japan"), so any other text is a name


@dataclass
class Query:
    """A resolved row: ``vector`` ``(d,)`` its embedding, ``gallery_id`` (``None`` for text and
    image rows, which are ranked against the whole gallery), ``labels`` (its gallery labels, or
    ``None``: no neighbour can then be marked), ``image`` (``None`` for a text query) and
    ``caption``, e.g. ``"#12 kissing face · google"``."""

    row: QueryRow
    vector: np.ndarray
    gallery_id: int | None
    labels: pd.Series | None
    image: Image.Image | None
    caption: str


TextEmbedder = Callable[[str], np.ndarray]


ImageEmbedder = Callable[[bytes, str], np.ndarray]


def resolve_queries(rows: Sequence[QueryRow], gallery: Gallery, encoder, images: Mapping[str, bytes] | None = None,
                    embed_text: TextEmbedder | None = None, embed_image: ImageEmbedder | None = None) -> list[Query]:
    """Each row as a :class:`Query`. Rows ``random`` without a seed take distinct images, in order,
    from one generator seeded with 0, so a figure is reproducible.

    Parameters
    ----------
    rows : sequence of QueryRow
        The rows to resolve.
    gallery : Gallery
        ``G`` images with embeddings ``(G, d)``: what id, name and random rows pick from.
    encoder : Encoder
        Embeds text and image rows unless ``embed_text`` / ``embed_image`` are given.
    images : mapping of str to bytes, optional
        The value of each ``image:`` / ``upload:`` row -> its file's bytes.
    embed_text : callable, optional
        ``embed_text(text) -> (d,)`` (the app passes a cached one).
    embed_image : callable, optional
        ``embed_image(bytes, name) -> (d,)`` (likewise).

    Returns
    -------
    list of Query
        One per row, in order, each with its ``vector`` ``(d,)``.

    Raises
    ------
    ValueError
        Naming the row and the fix, for an id past the gallery, a name no caption contains and an
        image row without its bytes.
    """
    embed_text = embed_text or (lambda text: encoder.encode_texts([text])[0].numpy())
    embed_image = embed_image or (
        lambda data, name: encoder.encode_images([query_image_from_upload(data, name)])[0].numpy())
    unseeded = itertools.cycle(np.random.default_rng(0).permutation(len(gallery)).tolist())
    queries = []
    for row in rows:
        if row.kind in ("text", "image", "upload"):
            queries.append(_outside_query(row, images or {}, embed_text, embed_image))
        else:
            queries.append(_gallery_query(row, _gallery_id(row, gallery, unseeded), gallery))
    return queries


def _gallery_id(row: QueryRow, gallery: Gallery, unseeded: Iterator[int]) -> int:
    """The gallery image an id, name or random row names; ``unseeded`` deals the unseeded random ones."""
    if row.kind == "random":
        return next(unseeded) if row.value is None else int(np.random.default_rng(row.value).integers(len(gallery)))
    if row.kind == "id":
        if row.value >= len(gallery):
            raise ValueError(f"query '{row}': the gallery has {len(gallery):,} images (ids 0 to {len(gallery) - 1}); "
                             "pick an id in that range")
        return int(row.value)
    hits = gallery.find(row.value, limit=1)
    if not hits:
        example = str(gallery.labels[gallery.name_column].iloc[0])
        raise ValueError(f"query '{row}': no gallery image's caption contains {row.value!r}; search for another "
                         f"name (e.g. {example!r})")
    return hits[0]


def _gallery_query(row: QueryRow, item: int, gallery: Gallery) -> Query:
    return Query(row, gallery.embeddings[item].numpy(), item, gallery.labels.iloc[item], gallery.image(item),
                 f"#{item} {gallery.caption(item)}")


def image_name(row: QueryRow) -> str:
    """The file name of an image or upload row (its path's last part, either slash)."""
    return str(row.value).replace("\\", "/").rsplit("/", 1)[-1]


def _outside_query(row: QueryRow, images: Mapping[str, bytes], embed_text: TextEmbedder,
                   embed_image: ImageEmbedder) -> Query:
    if row.kind == "text":
        return Query(row, np.asarray(embed_text(row.value)), None, None, None, f"text “{row.value}”")
    if row.value not in images:
        fix = "upload it again" if row.kind == "upload" else "give the path of an image file"
        raise ValueError(f"query '{row}': no image data for {row.value!r}; {fix}")
    data, name = images[row.value], image_name(row)
    image = query_image_from_upload(data, name)
    return Query(row, np.asarray(embed_image(data, name)), None, None, image, f"{row.kind} {name}")

