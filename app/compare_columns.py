"""The Compare page's columns that name their own encoder (``cosine encoder=SPEC``): each encoder
loaded through the sidebar's cached loader (never downloaded here), the gallery embedded by it, and
its geometries, baselines and upload embeddings; a column whose encoder cannot be used is left out
with a message, and the rest of the figure drawn."""
from __future__ import annotations

import streamlit as st

from anchordiv import explorer as ex
from anchordiv import figure as fg
from anchordiv.app import cached
from anchordiv.app.anchor_inputs import anchor_templates, column_spec, fitted_geometry, prior_texts
from anchordiv.app.encoder_choice import offline_text, page_encoder
from anchordiv.app.errors import ERROR_CHARS, FIXABLE_ERRORS
from anchordiv.app.sidebar import load_gallery_for
from anchordiv.encoders import missing_files, parse_model_spec
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.sidebar_state import SidebarState

# What a visitor can do about a column whose model cannot be used (its message says why).
COLUMN_MODELS = ("Choose another encoder= for this column (e.g. encoder=builtin), or drop encoder= to rank by the "
                 "sidebar's model")


def embedders(encoder):
    """The app's cached text and image embedders, for :func:`anchordiv.figure.compare`."""
    return ((lambda text: cached.embed_text_query(encoder, text)),
            (lambda data, name: cached.embed_upload(encoder, data, name)))


def column_encoder(spec: str, pretrained: str | None):
    """The encoder a column names, through the same cached loader (and arguments) as the sidebar's.
    Its ``pretrained`` is one of open_clip's tags for the architecture, or a checkpoint file that
    the server's data roots hold (``ValueError`` outside them): a link's columns name files too.
    A model whose files are not on the server is a ``ValueError`` saying what to do: a column never
    downloads, since the figure's run would wait for it with no progress shown (the sidebar's
    download shows it)."""
    launch = cached.launch_options()
    model = parse_model_spec(spec, pretrained)
    if pretrained is not None:
        from open_clip.pretrained import list_pretrained_tags_by_model

        if pretrained not in list_pretrained_tags_by_model(model.arch):
            return page_encoder(model, str(launch.roots.confine(pretrained, "checkpoint")), COLUMN_MODELS)
    missing = missing_files(model)
    if missing and launch.allow_download:
        raise ValueError(f"{model.label} is not on this server yet: choose it under Model in the sidebar to download "
                         "it (then switch back), and this column will use it")
    if missing:
        raise ValueError(offline_text(model, missing, COLUMN_MODELS))
    return page_encoder(model, pretrained, COLUMN_MODELS)


def column_model(sidebar: SidebarState, spec: str, pretrained: str | None, set_a: ex.AnchorText,
                 set_b: ex.AnchorText) -> fg.ColumnModel:
    """The sidebar's gallery embedded by the encoder a column names (``cosine encoder=SPEC``), with
    the app's cached geometries (the figure's anchors, through the templates chosen for that
    encoder: "auto" is its own default; a weighted set with its weights), baselines (ITI over the
    sets' terms) and upload embeddings."""
    encoder = column_encoder(spec, pretrained)
    templates = anchor_templates(encoder)
    source = cached.memory_source(load_gallery_for(sidebar.gallery, encoder))
    prior = prior_texts(sidebar.settings.prior_anchors)
    terms = (set_a.anchors, set_b.anchors)
    return fg.ColumnModel(
        encoder, source.gallery,
        geometry_for=lambda kind, scale: fitted_geometry(source, encoder, set_a, set_b,
                                                         column_spec(sidebar, kind, scale), prior, templates),
        baseline_for=lambda kind: cached.get_baseline(kind, source, encoder, tuple(zip(terms, templates))),
        embed_image=embedders(encoder)[1])


def column_models(sidebar: SidebarState, columns: list[fg.GeometryColumn], set_a: ex.AnchorText,
                  set_b: ex.AnchorText, limits: fg.FigureLimits) -> tuple[list[fg.GeometryColumn], dict]:
    """The columns whose encoder can be used, and the :class:`~anchordiv.figure.ColumnModel` of
    each encoder they name, by ``(spec, pretrained)``. A column whose encoder cannot be used is
    left out with an error box naming it and why, as a column that does not parse is: the rest of
    the figure is drawn. Columns naming more encoders than ``limits`` allow load none (the
    figure's own check refuses them, before anything is loaded)."""
    if fg.named_encoders(columns) > limits.encoders:
        return columns, {}
    models, refusals = {}, {}
    for key in dict.fromkeys(column.encoder_key for column in columns if column.encoder_key is not None):
        try:
            models[key] = column_model(sidebar, *key, set_a, set_b)
        except FIXABLE_ERRORS as error:
            refusals[key] = error
    for column in columns:
        if column.encoder_key in refusals:
            st.error(markdown_literal(f"Column {str(column)!r} is left out: {refusals[column.encoder_key]}",
                                      ERROR_CHARS))
    return [column for column in columns if column.encoder_key not in refusals], models
