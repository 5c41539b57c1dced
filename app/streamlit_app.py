"""anchordiv explorer: which images are similar, in the sense the anchors say.

Run with ``anchordiv demo`` (or ``make demo`` in a checkout): it passes the server's settings
(:func:`anchordiv.app.server_settings.streamlit_flags`: headless, no error details for visitors, the
upload cap) as ``streamlit run`` flags, which a bare ``streamlit run app/streamlit_app.py`` lacks.
This entry sets up the page, the navigation and the sidebar (which every page but the report
receives as one :class:`~anchordiv.explorer.sidebar_state.SidebarState`); each page is a short script of
``app/views/``, and what they share is the package ``anchordiv.app``: the cached resources
(:mod:`anchordiv.app.cached`), the sidebar, the query and anchor inputs, the links and kept values
(:mod:`anchordiv.app.url_state`) and the Explore page's sections (``explore_*``). The pages are
thin: widgets pass plain arguments to :mod:`anchordiv.explorer`, :mod:`anchordiv.figure`,
:mod:`anchordiv.lesson` and :mod:`anchordiv.explain`, and draw what they return.

* **Explore**: one query, anchor sets A and B, the weight ``p`` moved through the query's certified
  slider; neighbours beside cosine and UMAP of the geometry, over a gallery in memory (with the p
  sweep, "why this neighbour?", ITI) or a gallery store of 10^5 - 10^6 items on disk (with the
  slider's certificate and row numbers): one page over one :class:`~anchordiv.explorer.GallerySource`.
* **Compare**: a figure builder (queries × geometries, as the paper's Figures 1 and 8), exported as
  PNG, PDF or SVG.
* **Learn**: a lesson in anchor divergence on a toy world of directions, then on the gallery.
* **Report**: the shipped reproduction report.

Every page keeps its state in its URL (``st.query_params``), so a view can be shared as a link.

Image folders, gallery stores, labels CSVs and checkpoints are opened only under the data roots given at launch
(``anchordiv demo -- --data-root DIR``, or ``ANCHORDIV_DATA_ROOTS``), offered as
menus; typing any path is a local-only mode (``--allow-any-path``). See
:mod:`anchordiv.explorer.paths`.

Environment (for tests and small machines): ``ANCHORDIV_APP_GALLERY_SPLIT`` ("all", "train",
"heldout"; default "all"), ``ANCHORDIV_APP_GALLERY_LIMIT`` (first N images of the world) and
``ANCHORDIV_APP_THREADS`` (torch, OpenMP and BLAS threads of the server; default 1, 0 keeps the
libraries' own counts).
"""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st


def size_thread_pools() -> None:
    """OpenMP's and the BLAS libraries' pools sized as torch's (``ANCHORDIV_APP_THREADS``, default 1;
    0 leaves them alone), before torch and NumPy load and read them: a server shares its cores
    among sessions, and idle pool threads spinning after each small product cost a p step about
    twice its CPU time (measured on 2 cores). Torch itself is set by
    :func:`~anchordiv.app.cached.share_the_cores`."""
    threads = os.environ.get("ANCHORDIV_APP_THREADS", "1")
    if threads != "0":
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, threads)


size_thread_pools()

# The tab's icon is a file the package ships: a Material icon there is fetched from Google's font
# server by every visitor's browser, and nothing of the page may come from off the machine.
st.set_page_config(page_title="anchordiv explorer", page_icon=str(Path(__file__).with_name("favicon.png")),
                   layout="wide")
# A new server's first run imports torch, scikit-learn and the library (seconds: docs/benchmarks.md):
# the page says so instead of staying blank. Later runs find them imported and skip past this.
_starting = st.empty()
_starting.caption("Starting: loading torch, scikit-learn and anchordiv…")

# Torch and the library, imported once under the caption above.
from anchordiv.app.cached import share_the_cores  # noqa: E402
from anchordiv.app.server_settings import apply_unset_settings  # noqa: E402
from anchordiv.app.sidebar import draw_sidebar  # noqa: E402
from anchordiv.app.unread_links import name_unread_links  # noqa: E402
from anchordiv.app.kept_values import keep_values, run_finished  # noqa: E402
from anchordiv.app.url_state import follow_history  # noqa: E402

APP_DIR = Path(__file__).resolve().parent
share_the_cores()
name_unread_links()  # done before the server started, by anchordiv.app.serve; a bare `streamlit run` needs it here
if apply_unset_settings():  # a bare `streamlit run`'s first run: no Deploy menu for visitors
    st.rerun()  # this run's first message went out with Streamlit's default; the rerun's has ours

_starting.empty()

REPORT = "report"  # the one page that uses no sidebar
PAGES = [
    st.Page(APP_DIR / "views" / "explore.py", title="Explore", icon=":material/search:", default=True),
    st.Page(APP_DIR / "views" / "compare.py", title="Compare", icon=":material/grid_view:", url_path="compare"),
    st.Page(APP_DIR / "views" / "learn.py", title="Learn", icon=":material/school:", url_path="learn"),
    st.Page(APP_DIR / "views" / "report.py", title="Report", icon=":material/analytics:", url_path=REPORT),
]
# The pages in the bar at the top: the sidebar's first screen is left to the page's own controls
# (Explore's anchor sets).
page = st.navigation(PAGES, position="top")
st.html(APP_DIR / "components" / "page.css")  # style tags only: Streamlit adds them without taking room
follow_history()
keep_values(page.url_path)
if page.url_path != REPORT:
    draw_sidebar()  # here, not in each page: one set of widgets the pages share (SidebarState)
page.run()
run_finished()
