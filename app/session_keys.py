"""The session-state keys the explorer keeps for itself, declared once: not widgets' values (those
are the rows of :data:`~anchordiv.explorer.settings.SETTINGS`), but what a session remembers between runs.
Each starts with ``_``, so no widget key can clash with one.
"""
from __future__ import annotations

# How the sidebar's widgets keep their values (Streamlit's ``persist_state``): for the whole session,
# through the report (which draws no sidebar) and while a setting is hidden (the GMM's component
# count under another anchor model). The settings marked PERSISTED in the table of settings.
PERSIST = "session"

# -- this run --
SIDEBAR_STATE = "_sidebar_state"  # the run's SidebarState, drawn by the entry file, read by the page
# The run's sidebar container above the settings every page shares: the page's own first controls
# (Explore's anchor sets), where they stay in sight beside the page at any window size.
PAGE_SIDEBAR = "_page_sidebar"

# -- keeping widget values between pages (kept_values.keep_values) --
KEPT = "_kept"  # the kept widget values the last run left, by key
PAGE = "_page"  # the url_path of the page the last run drew
RUN_FINISHED = "_run_finished"  # set by a full run that drew its whole page

# -- widget values a client sends (widget_checks) --
WIDGET_HELD = "_widget_held"  # what each checked widget last held, by key: what it keeps in place of a refused value

# -- links (url_state) --
LINK_IGNORED = "_link_ignored"  # what the opened link carried that the page could not use, to say once
PRESETS_OF = "_presets_of"  # (gallery key, its presets): which gallery the anchor presets were filled from
LAUNCH_FOLLOWED = "_launch_followed"  # the server's --folder has been applied to this session
ENCODER_FOLLOWED = "_encoder_followed"  # the link's or the server's encoder has been applied


LINK_READ = "_link_read_"  # the start of every link_read key


def link_read(part: str) -> str:
    """Set once ``part`` of a page (:data:`~anchordiv.explorer.settings.SIDEBAR`, ...) has read the opened link."""
    return f"{LINK_READ}{part}"


# -- the query (query_inputs) --
LAST_QUERY = "_last_query"  # (gallery source key, query): what Explore shows while Upload waits for its file


def menu_labels(key: str) -> str:
    """The labels a query menu ``key`` has shown, by label: the item each names."""
    return f"_{key}_labels"


# -- anchor sets from files (anchor_inputs) --
def upload_problem(name: str) -> str:
    """Why the anchor file uploaded for set ``name`` was not taken, until it is replaced."""
    return f"_upload_problem_{name}"


# -- Find anchors and the learned geometry (learn_anchors) --
FIND_LEARNED = "_find_learned"  # (request, learned geometry): the last geometry learned from marks
FIND_MARKS = "_find_marks"  # the marks, by gallery source key
FIND_MARKS_OF = "_find_marks_of"  # (source key, query key): the query the mark menus were filled for
PLAYER_MARKS_FOR = "_player_marks_for"  # (source key, query key, its marks) the p player shows
PLAYER_MARKS_TAKEN = "_player_marks_taken"  # the player's reported marks were taken this run
PLAYER_MARKS_LEFT_OUT = "_player_marks_left_out"  # what the player sent that is no image of the gallery


def find_problem(name: str) -> str:
    """Why the list a "Use as A/B" click of Find anchors' ``name`` part offered was not used (said on
    the run the click starts)."""
    return f"_find_{name}_problem"


# -- the Compare figure (views/compare) --
COMPARE_UPLOADS = "_compare_uploads"  # the uploaded query images' bytes, by the name their row carries
COMPARE_ROWS_FULL = "_compare_rows_full"  # a row was not added: the figure has as many as it may
COMPARE_COLUMN_ERROR = "_compare_column_error"  # why the typed column was not added
COMPARE_ROWS_FROM = "_compare_rows_from"  # the rows the Explore query gave last: rows still equal follow it

# -- the lesson on weights (learn_weights) --
WEIGHTS_REQUEST = "_learn_weights_request"  # what the last click asked the learner for: (query, marks, scale)
WEIGHTS_LEARNED = "_learn_weights_learned"  # the last fit, (request, model): kept, as it takes a moment

# -- the UMAP map (explore_umap) --
UMAP_COLOUR_OF = "_umap_colour_of"  # the gallery source the map's colour menu was set for
