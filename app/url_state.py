"""Every page's state in its URL (``st.query_params``): read once per session and part of a page,
again on Back and Forward, and written back as the settings change.

The settings are the rows of :data:`anchordiv.explorer.settings.SETTINGS`: their link fields come
from :mod:`anchordiv.explorer.links`. The values kept between pages are :mod:`anchordiv.app.kept_values`'.
"""
from __future__ import annotations

from typing import Any, Sequence
from urllib.parse import urlencode

import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app.cached import source_presets
from anchordiv.app.session_keys import ENCODER_FOLLOWED, LINK_IGNORED, LINK_READ, PAGE, PRESETS_OF, link_read
from anchordiv.app.unread_links import STREAMLIT_VALUES
from anchordiv.cache import cache_dir
from anchordiv.explorer import limits, links
from anchordiv.explorer.anchors import preset_in
from anchordiv.explorer.literal import markdown_literal
from anchordiv.app.widget_state import current_value, write_values
from anchordiv.explorer.settings import PAGES, PRESET_DEFAULTS, UPLOAD_QUERY, VIEW, anchor_set_key, part_values

WHOLE_LINK = "all of it"  # how a link refused whole is named among the notes
# Said under an uploaded query in use and in the Share box: what the page's link carries then.
UPLOAD_NOT_LINKED = ("An uploaded image cannot travel in a link: it stays in this browser session. The page's link "
                     "keeps the anchors and p, and opens on the gallery's default query.")


def history_navigation() -> bool:
    """Whether this run is the browser's Back or Forward: Streamlit reruns the page on ``popstate``
    with the history entry's link. Read from Streamlit's run context, which is not public API: a
    release without the flag reads as no navigation."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return bool(getattr(get_script_run_ctx(), "is_history_navigation", False))


def follow_history() -> None:
    """Called at the start of every full run. On Back or Forward, every part of the page reads the
    link again (:func:`follow_link`), the encoder it names too: the page then shows the view the
    history entry names. Without this the session's current values stood and were published over
    the entry's link a moment later, so Back changed the address bar and then undid it."""
    if history_navigation():
        state = st.session_state
        for key in [key for key in state if key.startswith(LINK_READ)] + [ENCODER_FOLLOWED]:
            state.pop(key, None)


def part_settings(part: str) -> Any:
    """The settings of ``part`` of the page (:data:`~anchordiv.explorer.settings.VIEW`, ...) as one
    frozen, typed value (:func:`~anchordiv.explorer.settings.part_values`): what a page reads of
    them, once per run (a fragment's run too), after following its link and checking its values."""
    return part_values((part,), st.session_state)


def linked_texts() -> links.LinkedTexts:
    """Where this server keeps anchor lists too long for a link."""
    return links.LinkedTexts(cache_dir() / "linked-texts")


def sidebar_fields() -> list[links.LinkField]:
    return links.sidebar_fields(linked_texts())


def view_fields(source: ex.GallerySource) -> list[links.LinkField]:
    presets = source_presets(source)
    now = tuple(preset_in(presets, current_value(anchor_set_key("preset", side), default))
                for side, default in zip("ab", PRESET_DEFAULTS))
    return links.view_fields(len(source), source.default_query(), presets, now, linked_texts())


def opened_link() -> dict[str, list[str]]:
    """The page's link as it is now: each parameter with its values, in the link's order."""
    return {name: st.query_params.get_all(name) for name in st.query_params}


def refused_whole(params: dict[str, list[str]], fields: list[links.LinkField]) -> list[str]:
    """What is said of a link refused whole, before any of it is read (empty: it is read): one the
    server did not read (:func:`~anchordiv.app.unread_links.name_unread_links`: the lists of
    ``fields`` past their limits named first), or one longer than
    :data:`~anchordiv.explorer.limits.LINK_CHARS`. Its last note is the one about the whole link."""
    unread = links.unread_counts(params[links.UNREAD_PARAM][-1]) if links.UNREAD_PARAM in params else None
    notes = links.unread_notes(unread, fields) if unread is not None else []
    length = unread.characters if unread is not None else len(urlencode(params, doseq=True))
    if length > limits.LINK_CHARS:
        return [*notes, f"{WHOLE_LINK}: the link is {length:,} characters long, and this server takes links of "
                        f"at most {limits.LINK_CHARS:,} (the Share box makes short ones: long anchor lists travel as "
                        "a hash)"]
    if unread is not None:
        return [*notes, f"{WHOLE_LINK}: the link holds {unread.values:,} values, and this server reads links of at "
                        f"most {STREAMLIT_VALUES:,} values (the Share box makes short ones)"]
    return []


def follow_page_link() -> None:
    """On this session's first run of the page (the one :func:`keep_values` was last given), name
    what its link holds that no part of the page reads (:func:`~anchordiv.explorer.links.page_notes`:
    another page's settings, unknown parameters), or that the link is refused whole; said by
    :func:`link_notes`. Each part's own values are named by :func:`follow_link`, which calls this
    first: a page without settings (the report) calls it alone."""
    state = st.session_state
    page = state.get(PAGE)
    flag = link_read(f"page {page}")
    if flag in state:
        return
    params = opened_link()
    refused = refused_whole(params, [])
    state.setdefault(LINK_IGNORED, []).extend(refused or links.page_notes(params, page))
    state[flag] = True


def follow_link(fields: list[links.LinkField], part: str) -> dict[str, Any]:
    """On this session's first run of ``part`` of a page, take the values the page's link carries
    (what it ignores is said by :func:`link_notes`) and return them; then give every field without a
    value its default, so that widgets take their values from the session state alone."""
    state = st.session_state
    follow_page_link()
    flag = link_read(part)
    taken: dict[str, Any] = {}
    if flag not in state:
        params = opened_link()
        refused = refused_whole(params, fields)
        if refused:  # said whole by follow_page_link; here, this part's lists past their limits
            params = {}
            state.setdefault(LINK_IGNORED, []).extend(refused[:-1])
        # What no part of the page reads is named once for the page (follow_page_link), not by each part.
        read = links.read_link(params, fields, known=params)
        taken = read.values
        if history_navigation():  # a history entry's link leaves out exactly the settings at their defaults
            state.update({item.key: item.default for item in fields if item.key not in taken})
        state.update(taken)
        state.setdefault(LINK_IGNORED, []).extend(read.ignored)
        state[flag] = True
    for item in fields:
        state.setdefault(item.key, item.default)
    return taken


def follow_view_link(source: ex.GallerySource) -> list[links.LinkField]:
    """:func:`follow_link` for the query and the anchor sets, which need the gallery; the fields,
    for :func:`publish_link`. A link made on another gallery keeps its anchors and p, not its query."""
    state = st.session_state
    presets = source_presets(source)
    refresh_presets(source.key, presets)
    fields = view_fields(source)
    first = link_read(VIEW) not in state
    restoring = first and history_navigation()
    if first:
        tokens = st.query_params.get_all(links.GALLERY_PARAM)  # one value, read as a field's: the last
        repeated = links.repeated(tokens, tokens[:-1])
        if repeated:
            state.setdefault(LINK_IGNORED, []).append(f"{links.GALLERY_PARAM}: {repeated}")
        if tokens and tokens[-1] != links.gallery_token(source.key):
            fields = [item for item in fields if item.key != "query_id"]
            state.setdefault(LINK_IGNORED, []).append(
                "query: the link was made on another gallery or model, so its query image is not opened")
    taken = follow_link(fields, VIEW)
    for side in "ab":
        preset_key, anchors_key = anchor_set_key("preset", side), anchor_set_key("anchors", side)
        # A preset this gallery lacks (its styles, where it has no style column) gives way to its stand-in.
        preset = preset_in(presets, current_value(preset_key))
        write_values({preset_key: preset})
        # A link that names a preset, not its list; or a history entry's, which leaves out a list equal to its preset's.
        if anchors_key not in taken and (preset_key in taken or restoring):
            write_values({anchors_key: "\n".join(presets[preset])})
    return view_fields(source)


def refresh_presets(gallery_key: str, presets: dict[str, tuple[str, ...]]) -> None:
    """On a change of gallery, an anchor set still filled from a preset of the last gallery (its
    text equal to that preset's list) becomes the new gallery's list of that preset (or of its
    stand-in, :func:`~anchordiv.explorer.anchors.preset_in`); a set the person typed stays as it is."""
    state = st.session_state
    last = state.get(PRESETS_OF)
    if last is not None and last[0] != gallery_key:
        old = last[1]
        for side in "ab":
            preset_key, anchors_key = anchor_set_key("preset", side), anchor_set_key("anchors", side)
            text, chosen = current_value(anchors_key), current_value(preset_key)
            filled = [name for name in dict.fromkeys([chosen, *old]) if name in old and "\n".join(old[name]) == text]
            if filled:
                preset = preset_in(presets, filled[0])
                write_values({preset_key: preset, anchors_key: "\n".join(presets[preset])})
    state[PRESETS_OF] = (gallery_key, presets)


def link_notes() -> None:
    """Say once, in one warning, what the opened link carried that the page could not use; on a page
    without settings (the report), that the link is not used at all."""
    ignored = st.session_state.pop(LINK_IGNORED, None)
    if ignored:
        notes = "; ".join(markdown_literal(note) for note in dict.fromkeys(ignored))
        whole = any(note.startswith(WHOLE_LINK) for note in ignored)
        page = PAGES.get(st.session_state.get(PAGE))
        if page is not None and not page.parts:
            others = [other.title for other in PAGES.values() if other.parts]
            st.warning(f"The {page.title.lower()} page has no settings, so this link is not used: {notes}. The page is "
                       f"the same for every link; choose the settings on the {', '.join(others[:-1])} or "
                       f"{others[-1]} page.")
            return
        st.warning(f"This link opened with defaults for what it could not use: {notes}. "
                   + ("Choose the settings on the page." if whole else
                      "The rest of the link is used; choose the others on the page."))


def link_params(fields: list[links.LinkField], source: ex.GallerySource | None = None) -> dict[str, str | list[str]]:
    """The URL parameters of the current values of ``fields``, with the gallery's token when they
    name anything (a query id means nothing on another gallery). While the query is an upload
    (which no link can carry) the link names no query: the gallery image picked before it is not
    what the page shows."""
    if current_value("query_mode") == UPLOAD_QUERY:
        fields = [item for item in fields if item.key != "query_id"]
    params = links.write_link(st.session_state, fields)
    if source is not None and params:
        params[links.GALLERY_PARAM] = links.gallery_token(source.key)
    return params


def waiting_params(later: Sequence[str] = ()) -> dict[str, list[str]]:
    """The parameters of the page's link that a part of the page has yet to read (the Learn page
    writes its link before its gallery part reads the view's query, anchors and p), or that a part
    of ``later`` writes itself later in the run: kept in the URL as they are until then, so that a
    run changes the link once, not once without them and again with them. None of a link refused
    whole (:func:`refused_whole`)."""
    state = st.session_state
    page = PAGES.get(state.get(PAGE))
    waiting = {part for part in (page.parts if page is not None else ()) if link_read(part) not in state}
    waiting |= set(later)
    params = opened_link() if waiting else {}
    if not params or refused_whole(params, []):
        return {}
    parts = links.param_parts()
    return {name: values for name, values in params.items() if parts.get(name) in waiting}


def publish_link(fields: list[links.LinkField], source: ex.GallerySource | None = None,
                 later: Sequence[str] = ()) -> None:
    """Put the current values of ``fields`` in the page's URL (only when they changed: each change
    is a message to the browser, and a new entry of the browser's history), beside what a part of
    the page has yet to read or the parts ``later`` write later in the run (:func:`waiting_params`)."""
    params = waiting_params(later) | link_params(fields, source)
    current = {name: st.query_params.get_all(name) for name in st.query_params}
    wanted = {name: value if isinstance(value, list) else [value] for name, value in params.items()}
    if current != wanted:
        st.query_params.from_dict(params)


def share_box(fields: list[links.LinkField], source: ex.GallerySource | None = None) -> None:
    """The page's link to copy (the copy button is on the code block), written only while the box is
    open: it sits beside the p slider, and a move of p should not pay for a link nobody reads."""
    box = st.popover("Share this view", icon=":material/link:", key="share_popover", on_change="rerun")
    if not box.open:
        return
    params = link_params(fields, source)
    with box:
        st.code((st.context.url or "") + ("?" + urlencode(params, doseq=True) if params else ""), language=None,
                wrap_lines=True)
        if current_value("query_mode") == UPLOAD_QUERY:
            st.warning(UPLOAD_NOT_LINKED)
        st.caption("Opening this link on a server with the same gallery and model shows the same view. An uploaded "
                   "query cannot travel in a link; long anchor lists are kept on this server under a hash.")
