"""Marks and a learned geometry (the "Find anchors" section of the Explore page): the person marks
items of the neighbour grids "like the query" or "not like it", for this query and, kept in the
session, for others; "Learn a geometry" fits :class:`~anchordiv.FeedbackAnchors` over the
vocabulary (:func:`~anchordiv.explorer.feedback.learn_weights`) and shows its weights, which one
click makes anchor set A or B (as ``term<TAB>weight`` lines)."""
from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st
import torch

from anchordiv.app import cached
from anchordiv.app.errors import attempt
from anchordiv.app.explore_view import ExploreView, neighbours
from anchordiv.app.query_inputs import caption_of
from anchordiv.app.session_keys import (FIND_LEARNED, FIND_MARKS, FIND_MARKS_OF, PLAYER_MARKS_FOR,
                                         PLAYER_MARKS_LEFT_OUT, PLAYER_MARKS_TAKEN, find_problem)
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.url_state import part_settings
from anchordiv.app.widget_checks import IMAGES, checked_ids
from anchordiv.app.widget_state import current_value, replace_value, say
from anchordiv.explorer.anchors import weighted_anchor_text
from anchordiv.explorer.feedback import (MAX_MARKED_QUERIES, MAX_MARKS, LearnedAnchors, QueryMarks, explanation,
                                         learn_weights, marks_key, too_few_to_tell, training_set)
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.p_player import PlayerMarks, PlayerReply
from anchordiv.explorer.settings import SETTINGS, VIEW, anchor_set_key
from anchordiv.prompts import default_choice

CHART_TERMS = 20  # bars in the weights' chart
LIKE, UNLIKE = SETTINGS["find_like"], SETTINGS["find_unlike"]  # the menus of a query's marks
MARK_MENUS = (LIKE, UNLIKE)


def use_buttons(column, terms: list[str], name: str, text: str | None = None) -> None:
    """"Use as A" / "Use as B": the list (or ``text``) becomes that anchor set (a callback, as the
    preset menus do, so the set's text area shows it on the run the click starts). A text longer
    than the set's text area holds is not used (the area would cut it): an error box says so on
    that run."""
    value = "\n".join(terms) if text is None else text
    problem_key = find_problem(name)

    def use(side: str) -> None:
        anchors = SETTINGS[anchor_set_key("anchors", side)]
        limit = anchors.max_chars
        if len(value) > limit:
            st.session_state[problem_key] = (f"This list has {len(value):,} characters; set {side.upper()} holds at "
                                             f"most {limit:,}, so it is not used and the set is as it was. Download "
                                             "it, cut it down and load it into the set.")
        else:
            replace_value(anchors.key, value)

    left, right = column.columns(2)
    for side, part in (("a", left), ("b", right)):
        part.button(f"Use as {side.upper()}", key=f"find_{name}_{side}", on_click=use, args=(side,),
                    disabled=not terms)
    problem = st.session_state.pop(problem_key, None)  # said on the run the click starts only
    if problem is not None:
        column.error(problem)


def marks_section(view: ExploreView, terms: tuple[str, ...], kinds: tuple[str, ...] | None) -> None:
    """The marks of this query, how many queries have marks, and the geometry learned over ``terms``
    of ``kinds`` (``None``: one kind)."""
    st.markdown("**Mark neighbours, learn a geometry**")
    marks = query_marks(view)
    kept = gallery_marks(view.source.key)
    st.caption(f"Marks kept for {len(kept)} quer{'y' if len(kept) == 1 else 'ies'} on this gallery "
               f"(this one {'included' if marks.marked else 'not marked yet'}); each query keeps its own.")
    request = learn_request(view, terms, kinds, kept)
    learn_col, clear_col = st.columns(2)
    if learn_col.button("Learn a geometry", key="find_learn", type="primary"):
        with st.spinner(f"Learning a geometry from your marks over {len(terms):,} terms…"):
            learned = attempt(lambda: learn(view, terms, kinds, list(kept.values())), "Cannot learn a geometry")
        if learned is not None:
            st.session_state[FIND_LEARNED] = (request, learned)
    clear_col.button("Clear all marks", key="find_clear", on_click=clear_marks, args=(view.source.key,))
    kept_learned = st.session_state.get(FIND_LEARNED)
    if kept_learned is None or kept_learned[0][0] != view.source.key:
        return
    if kept_learned[0] == request:
        show_learned(kept_learned[1])
    else:  # neither shown nor offered as a set: it is not the geometry of what the page now holds
        st.info("The vocabulary, scale or marks changed since these weights were learned: press Learn again.")


def learn_request(view: ExploreView, terms: tuple[str, ...], kinds: tuple[str, ...] | None,
                  kept: dict[str, QueryMarks]) -> tuple:
    """What a geometry is learned from, to tell a learned one that is out of date: the gallery's
    key (first), the encoder, a hash of the vocabulary and its kinds, the sidebar's scale and every
    query's marks."""
    vocabulary = hashlib.sha256("\n".join([*terms, "", *(kinds or ())]).encode("utf-8")).hexdigest()
    marks = tuple(sorted((key, query.like, query.unlike) for key, query in kept.items()))
    return (view.source.key, view.encoder.name, vocabulary, float(view.geometry.spec.scale), marks)


def gallery_marks(source_key: str) -> dict[str, QueryMarks]:
    """The session's marks on this gallery, by query (:func:`~anchordiv.explorer.feedback.marks_key`)."""
    return st.session_state.setdefault(FIND_MARKS, {}).setdefault(source_key, {})


def clear_marks(source_key: str) -> None:
    gallery_marks(source_key).clear()
    for menu in MARK_MENUS:
        replace_value(menu.key, [])


def this_query(view: ExploreView) -> tuple[dict[str, QueryMarks], str, QueryMarks]:
    """The session's marks on this gallery, this query's key among them, and its marks (none yet:
    empty marks of this query)."""
    kept, key = gallery_marks(view.source.key), marks_key(view.query_id, view.query)
    return kept, key, kept.get(key) or QueryMarks(np.asarray(view.query, dtype=np.float32), view.query_id,
                                                  view.query_text)


def no_room(kept: dict[str, QueryMarks], key: str) -> bool:
    """Whether query ``key`` may not be marked: it has no marks and
    :data:`~anchordiv.explorer.feedback.MAX_MARKED_QUERIES` queries have."""
    return key not in kept and len(kept) >= MAX_MARKED_QUERIES


def store_marks(kept: dict[str, QueryMarks], key: str, marks: QueryMarks) -> QueryMarks:
    """``marks`` kept as query ``key``'s (or the query dropped from ``kept`` when they mark nothing)."""
    if marks.marked:
        kept[key] = marks
    else:
        kept.pop(key, None)
    return marks


def player_marks(view: ExploreView) -> PlayerMarks:
    """What the p player's toggles show for this query: its "like" marks and whether more may be
    made (fewer than :data:`~anchordiv.explorer.feedback.MAX_MARKS`, and the query may have marks);
    kept in the session, with the query, for :func:`take_player_marks`."""
    kept, key, current = this_query(view)
    st.session_state[PLAYER_MARKS_FOR] = (view.source.key, key, current)
    return PlayerMarks(tuple(int(item) for item in current.like),
                       not no_room(kept, key) and len(current.like) < MAX_MARKS)


def take_player_marks(reply: PlayerReply) -> None:
    """The p player's toggle callback: the reported gallery ids (read by the player: ids of this
    gallery only, each once, at most :data:`~anchordiv.explorer.feedback.MAX_MARKS`; anything else
    a client might send is left out, and said by :func:`rerun_after_marks`) become this query's
    "like" marks, and the page runs again whole so that Find anchors shows them."""
    state = st.session_state
    checked, target = reply.marks, state.get(PLAYER_MARKS_FOR)
    if checked is None or target is None:
        return
    source_key, key, current = target
    kept = gallery_marks(source_key)
    if no_room(kept, key):
        return
    state[PLAYER_MARKS_LEFT_OUT] = checked.note("The p player's marks", IMAGES,
                                                "Mark images with the player's toggles.")
    like = checked.kept
    current = kept.get(key) or current
    marks = store_marks(kept, key, replace(current, like=tuple(like),
                                           unlike=tuple(item for item in current.unlike if item not in like)))
    replace_value(LIKE.key, list(marks.like))
    replace_value(UNLIKE.key, list(marks.unlike))
    state[FIND_MARKS_OF] = (source_key, key)
    state[PLAYER_MARKS_TAKEN] = True


def rerun_after_marks() -> None:
    """After a run started by a toggle (inside the results fragment), the whole page once more:
    Find anchors, outside the fragment, shows the marks; on that run, below the player, what was
    left out of the marks it sent."""
    if st.session_state.pop(PLAYER_MARKS_TAKEN, False):
        st.rerun()
    say(st.session_state.pop(PLAYER_MARKS_LEFT_OUT, ""), st)


def mark_options(view: ExploreView) -> dict[int, str]:
    """The items of the neighbour grids (anchor divergence at the current p, then cosine), each
    with where it is ranked."""
    tables = {"anchor": neighbours(view, part_settings(VIEW).p), **view.baselines}
    where: dict[int, list[str]] = {}
    for method, table in tables.items():
        for rank, item in table[["rank", "gallery_id"]].itertuples(index=False):
            where.setdefault(int(item), []).append(f"{method} {rank}")
    return {item: ", ".join(places) for item, places in where.items()}


def query_marks(view: ExploreView) -> QueryMarks:
    """This query's marks: two multiselects over the grids' items, filled from the session's marks
    when the query (or the page) changes, and written back to them. Once
    :data:`~anchordiv.explorer.feedback.MAX_MARKED_QUERIES` queries have marks, a query without
    any gets none (its menus are off and say why), so Learn never refuses their number."""
    state = st.session_state
    kept, key, current = this_query(view)
    full = no_room(kept, key)
    shown_for = (view.source.key, key)
    if state.get(FIND_MARKS_OF) != shown_for or any(current_value(menu.key) is None for menu in MARK_MENUS):
        replace_value(LIKE.key, list(current.like))
        replace_value(UNLIKE.key, list(current.unlike))
        state[FIND_MARKS_OF] = shown_for
    like, unlike = (checked_ids(menu.key, len(view.source), MAX_MARKS, f"“{menu.label.removesuffix(' (optional)')}”",
                                "Mark items of the grids above.", st) for menu in MARK_MENUS)
    where = mark_options(view)
    options = list(dict.fromkeys([*where, *like, *unlike]))
    caption = caption_of(view.source)

    def label(item: int) -> str:
        return f"#{item} {caption(item)}" + (f" ({where[item]})" if item in where else "")

    like_col, unlike_col = st.columns(2)
    like, unlike = (setting_widget(column, menu.key, options=options, format_func=label, max_selections=MAX_MARKS,
                                   disabled=full) for column, menu in ((like_col, LIKE), (unlike_col, UNLIKE)))
    if full:
        st.warning(f"{MAX_MARKED_QUERIES} queries already have marks, the most a geometry is learned from: this "
                   "one cannot be marked, and theirs are kept. Learn from them, or clear the marks to start again.")
        return current
    marks = replace(current, like=tuple(int(i) for i in like), unlike=tuple(int(i) for i in unlike))
    return store_marks(kept, key, marks)


def learn(view: ExploreView, terms: tuple[str, ...], kinds: tuple[str, ...] | None,
          marks: list[QueryMarks]) -> LearnedAnchors:
    """The geometry learned from ``marks`` over ``terms`` of ``kinds`` at the sidebar's scale: on the gallery
    rows the section reads (all of a gallery in memory, a fixed sample of a large store) and the
    marked rows; ``ValueError`` naming what to fix."""
    data = training_set(marks, len(view.source))
    with st.spinner("Learning the anchor weights from your marks…"):
        anchors = cached.encode_texts(view.encoder, terms, default_choice(view.encoder))
        ids, rows = cached.vocabulary_gallery(view.source)
        extra = np.setdiff1d(data.marked_ids, ids)
        if extra.size:
            ids, rows = np.concatenate([ids, extra]), torch.cat([rows, view.source.rows(extra)])
        return learn_weights(anchors, terms, data, ids, rows, view.geometry.spec.scale, kinds,
                             device=view.geometry.device)


def show_term_table(column, frame: pd.DataFrame, key: str) -> None:
    """A table of terms and their numbers that keeps the numbers in view in a narrow column: the
    numbers first and narrow, then the term, which a long one may fill to the column's edge
    (hovering a cell shows it whole)."""
    numbers = [name for name in frame.columns if name != "term"]
    column.dataframe(frame[[*numbers, "term"]], hide_index=True, key=key,
                     column_config={name: st.column_config.NumberColumn(width="small") for name in numbers})


def show_learned(learned: LearnedAnchors) -> None:
    """The learned anchors as the geometry's explanation: a sentence, the table and the chart of
    the weights, "Use as A" / "Use as B" and the download; or, when the marks do not decide the
    weights, that they are too few to tell and what to mark (the weights are not offered)."""
    if not learned.decided:
        st.warning(too_few_to_tell(learned))
        return
    st.markdown(markdown_literal(explanation(learned)))
    table = learned.table()
    table_col, chart_col = st.columns([2, 3])
    show_term_table(table_col, table, "find_learned_table")
    chart_col.vega_lite_chart(table.head(CHART_TERMS), {
        "mark": "bar", "height": 16 * min(len(table), CHART_TERMS) + 20,
        "encoding": {"y": {"field": "term", "type": "nominal", "sort": "-x", "title": None},
                     "x": {"field": "weight", "type": "quantitative", "title": "learned weight"}}},
        width="stretch", key="find_weights_chart")
    text = attempt(lambda: weighted_anchor_text(list(learned.terms), learned.weights.tolist()),
                   "Cannot write the learned set")
    if text is None:
        return
    st.caption(f"Learned from the marks of {learned.queries} quer{'y' if learned.queries == 1 else 'ies'}: the "
               "weight is on the kind of term that the query and the items marked like it agree on most. As an "
               "anchor set its terms are encoded through the set's templates: keep them 'auto' to use the "
               "geometry learned here.")
    use_buttons(st, list(learned.terms), "learned", text)
    # The format of an anchor set's own download, which its "Load set" reads back.
    st.download_button("Download the learned set (terms and weights)", text.encode(), "learned-anchors.tsv",
                       "text/tab-separated-values", key="find_learned_download")
