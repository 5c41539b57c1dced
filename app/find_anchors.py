"""The Explore page's "Find anchors" section: a vocabulary (a shipped or computed list, one's own
typed list, or a text file under the data roots), the terms it suggests for the query (its tilted
distribution, and the terms that set the query's cosine neighbourhood apart from the gallery), each
list one click from anchor set A or B; then the marks and the learned geometry
(:mod:`anchordiv.app.learn_anchors`). Also the pull/push terms of "why this neighbour?"."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from anchordiv.app import cached
from anchordiv.app.errors import attempt
from anchordiv.app.explore_view import ExploreView
from anchordiv.app.learn_anchors import marks_section, show_term_table, use_buttons
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.widget_checks import checked_widget
from anchordiv.explorer.literal import markdown_literal, shown
from anchordiv.explorer.settings import FIND_AUTO, FIND_FILE, FIND_OWN, SETTINGS
from anchordiv.explorer.vocabulary import (default_vocabulary, file_terms, panel_vocabulary, typed_terms,
                                           vocabulary_files)
from anchordiv.explorer.widget_values import Allowed
from anchordiv.grids import readable_value
from anchordiv.images import display_name
from anchordiv.prompts import default_choice
from anchordiv.vocabularies import vocabulary_description

SUGGESTED = 10  # terms in each suggestion table
PAIR_TERMS = 8  # terms pulling and pushing in "why this neighbour?"


FIND_LABEL = "Find anchors: suggested terms, and a geometry learned from the items you mark"


def find_anchors_section(view: ExploreView) -> None:
    """The section, for the current query over the current gallery: drawn only while its expander
    is open (opening it reruns the page), since its tables and menus, drawn, would cost the browser
    a step's whole budget on every move of p (docs/benchmarks.md)."""
    box = st.expander(FIND_LABEL, key="find_open", on_change="rerun")
    if not box.open:
        return
    with box:
        terms = vocabulary_widgets(view.encoder)
        if terms is None:
            return
        suggestions(view, terms)
        marks_section(view, terms, chosen_kinds(view.encoder, terms))


def vocabulary_label(option: str, encoder) -> str:
    """A menu option as the menu shows it: the list auto names, or a list's name and what it is."""
    if option == FIND_AUTO:
        return f"auto: {default_vocabulary(encoder.name)}"
    if option in (FIND_OWN, FIND_FILE):
        return SETTINGS["find_vocabulary"].format_option(option)
    return f"{option}: {vocabulary_description(option)}"


def vocabulary_widgets(encoder) -> tuple[str, ...] | None:
    """The vocabulary menu and, for one's own list, its text area or file menu; the terms (an error
    box and ``None`` when they cannot be used)."""
    roots = cached.data_roots()
    choice = setting_widget(st, "find_vocabulary", options=vocabulary_options(),
                            format_func=lambda option: vocabulary_label(option, encoder))
    if choice == FIND_OWN:
        setting_widget(st, "find_own_terms")
    elif choice == FIND_FILE:
        if roots.allow_any_path:
            setting_widget(st, "find_file_path")
        else:
            setting_widget(st, "find_file", options=file_options(), format_func=display_name)
    terms = attempt(lambda: chosen_terms(encoder), "This vocabulary cannot be used")
    if terms is not None:
        st.caption(f"{len(terms):,} terms, encoded with this model's default prompt: "
                   f"{markdown_literal(default_choice(encoder).label)}")
    return terms


def vocabulary_options() -> list[str]:
    """The vocabulary menu's options: a file only where the server offers data folders."""
    roots = cached.data_roots()
    return [option for option in SETTINGS["find_vocabulary"].options if option != FIND_FILE or not roots.opens_nothing]


def file_options() -> list[str]:
    return [str(path) for path in vocabulary_files(cached.data_roots())]


def vocabulary_choice() -> str:
    """The vocabulary the menu holds, checked (:func:`~anchordiv.app.widget_checks.checked_widget`):
    "why this neighbour?" reads it before the menu is drawn."""
    return checked_widget("selectbox", SETTINGS["find_vocabulary"].label, "find_vocabulary",
                          Allowed.choice(vocabulary_options()), st, FIND_AUTO)


def chosen_terms(encoder) -> tuple[str, ...]:
    """The terms the vocabulary widgets name (as the session state holds them: "why this
    neighbour?" reads them before the section draws), each value checked as its widget's is;
    ``ValueError`` when they cannot be used."""
    choice = vocabulary_choice()
    if choice == FIND_OWN:
        return typed_terms(checked_widget("text_area", SETTINGS["find_own_terms"].label, "find_own_terms",
                                          Allowed.text(), st, ""))
    if choice == FIND_FILE:
        roots = cached.data_roots()
        path = (checked_widget("text_input", SETTINGS["find_file_path"].label, "find_file_path", Allowed.text(), st, "")
                if roots.allow_any_path else
                checked_widget("selectbox", SETTINGS["find_file"].label, "find_file",
                               Allowed.choice(file_options(), empty=True), st))
        if not path:
            raise ValueError("choose a text file of terms")
        found = roots.confine(path, "vocabulary file").stat()
        return vocabulary_file_terms(roots, str(path), found.st_mtime_ns, found.st_size)
    return named_vocabulary(named_list(choice, encoder))[0]


def chosen_kinds(encoder, terms: tuple[str, ...]) -> tuple[str, ...] | None:
    """What kind each of ``terms`` is when they are a named list whose terms come in kinds (the
    built-in world's: objects and styles); ``None`` (one kind) for a person's own list."""
    choice = vocabulary_choice()
    if choice in (FIND_OWN, FIND_FILE):
        return None
    listed, kinds = named_vocabulary(named_list(choice, encoder))
    return kinds if listed == terms else None


def named_list(choice: str, encoder) -> str:
    """The named list a vocabulary menu choice means (the model's default for "auto")."""
    return default_vocabulary(encoder.name) if choice == FIND_AUTO else choice


@st.cache_resource(show_spinner=False, max_entries=16)
def named_vocabulary(name: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """:func:`~anchordiv.explorer.vocabulary.panel_vocabulary` of a named list, read once per server:
    the section and "why this neighbour?" ask for its terms and kinds on every rerun, and the
    built-in world's lists read the shipped index (its hashes checked) each time they are made."""
    return panel_vocabulary(name)


@st.cache_data(show_spinner=False, max_entries=4, hash_funcs=cached.BY_IDENTITY)
def vocabulary_file_terms(roots, path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    """:func:`~anchordiv.explorer.vocabulary.file_terms` of ``path``, read once per version of the
    file (its modification time ``mtime_ns`` and ``size`` in bytes are in the cache key): a file
    may hold megabytes, and every rerun asks for its terms twice (the section and "why this
    neighbour?")."""
    return file_terms(roots, path)


def suggestions(view: ExploreView, terms: tuple[str, ...]) -> None:
    """The query's most probable terms beside those that set its cosine top-k apart from the gallery."""
    st.markdown("**Suggested anchors**")
    tilt_col, apart_col = st.columns(2)
    tilt = attempt(lambda: cached.suggested_terms(view.encoder, terms, view.query, SUGGESTED), "Cannot rank the terms")
    if tilt is not None:
        tilt_col.caption("The terms this image is most about.",
                         help=f"The most probable terms under the query's tilted distribution p(term | s x), s the "
                              f"model's logit scale ({view.encoder.logit_scale:.1f}).")
        show_term_table(tilt_col, tilt, "find_tilt_table")
        use_buttons(tilt_col, tilt["term"].tolist(), "tilt")
    neighbours = tuple(int(item) for item in view.baselines["cosine"]["gallery_id"])
    apart = attempt(lambda: cached.separating_terms(view.encoder, terms, view.source, neighbours, SUGGESTED),
                    "Cannot contrast the neighbourhood")
    if apart is not None:
        rows = len(cached.vocabulary_gallery(view.source)[0])
        apart_col.caption(f"The terms that set its {len(neighbours)} nearest images apart from the rest of the "
                          f"gallery ({rows:,} images{'' if rows == len(view.source) else ', a fixed sample'}).",
                          help="Each term's part m log(m / g) of KL(m ‖ g), m and g the mean tilted distributions "
                               "of the query's cosine top-k and of the gallery.")
        show_term_table(apart_col, apart, "find_apart_table")
        use_buttons(apart_col, apart["term"].tolist(), "apart")


def pair_terms_section(view: ExploreView, neighbour: int, rank: int) -> None:
    """The vocabulary's terms that pull the query and neighbour ``neighbour`` together and those
    that push them apart, at the geometry's scale and in its direction, for "why this neighbour?"."""
    try:
        terms = chosen_terms(view.encoder)
    except ValueError as error:
        st.caption(markdown_literal(f"No vocabulary for the pull/push terms (choose one under Find anchors): {error}"))
        return
    scale, reverse = view.geometry.spec.scale, view.geometry.spec.reverse
    pair = (np.asarray(view.query, dtype=np.float32), view.source.rows(np.asarray([neighbour]))[0].numpy())
    first, second = pair[::-1] if reverse else pair
    terms_of = attempt(lambda: cached.pair_terms(view.encoder, terms, first, second, scale, PAIR_TERMS),
                       "Cannot weigh the vocabulary for this pair")
    if terms_of is None:
        return
    x, y = ("n", "q") if reverse else ("q", "n")
    st.markdown(f"**Over the vocabulary ({len(terms):,} terms, s = {scale:g}): what pulls the query and neighbour "
                f"{rank} together, and what pushes them apart**")
    pull_col, push_col = st.columns(2)
    pull_col.table(term_table(terms_of.pull_terms, terms_of.pull_scores, "pull: √(p_q · p_n)"))
    push_col.table(term_table(terms_of.push_terms, terms_of.push_scores, f"push: p_{x} log(p_{x} / p_{y})"))
    st.caption(f"p_q and p_n: the query's and the neighbour's tilted distributions over this vocabulary (uniform "
               f"weights), not over the geometry's anchors. Their KL(p_{x} ‖ p_{y}) = "
               f"{readable_value(terms_of.divergence, divergence=True)}, the sum of every term's push score, is "
               "another number from the anchor divergence above, which the geometry's own anchors and weights give. "
               "A pull score is large for a term both lean on (their sum over all terms is 1 for equal distributions).")


def term_table(terms, scores, name: str) -> pd.DataFrame:
    """Terms (as text: a static table draws Markdown) and their scores (column ``name``) to 4 decimals."""
    return pd.DataFrame({"term": [markdown_literal(shown(term)) for term in terms],
                         name: np.round(np.asarray(scores, dtype=np.float64), 4)}).set_index("term")
