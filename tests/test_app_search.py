"""Search in one step, through streamlit.testing.v1.AppTest: Enter on "Search by name" takes the best
match as the query at once and the Matches menu, best first, shows it picked; "Random image" and an
upload clear the search and its pick; the URL follows the query, and an upload, which no link can
carry, leaves no query in it and the page says so.

The app's gallery is a slice of the emoji world without cats (tests/conftest.py), so the names
typed are the slice's: tests/test_name_match.py puts the whole world's cats first."""
from __future__ import annotations

from app_pages import messages
from helpers import needs_builtin
from test_app import red_png, start
from anchordiv.app.url_state import UPLOAD_NOT_LINKED

pytestmark = needs_builtin


def search(app, text: str):
    """Type ``text`` in "Search by name" and press Enter (the text input's change runs the page)."""
    return app.text_input(key="query_search").set_value(text).run()


def test_enter_takes_the_best_match_and_the_menu_shows_it_picked(library):
    app = start()
    gallery, names = library["gallery"], library["gallery"].labels["name"]
    default = app.session_state["query_id"]
    search(app, "kissing face")  # an exact name: the first image of that name
    kissing = int(names[names == "kissing face"].index.min())
    assert app.session_state["query_id"] == kissing and app.query_params["query"] == str(kissing)
    menu = app.selectbox(key="query_pick")
    assert menu.value == kissing and menu.index == 0 and menu.label == "Matches, best first"
    assert not app.exception

    search(app, "FACE ")  # no exact name: the names that start with it come first, the shorter first
    best = gallery.find("face")[0]
    assert names[best] == "face with peeking eye" and app.session_state["query_id"] == best
    menu = app.selectbox(key="query_pick")
    assert menu.value == best and menu.index == 0 and len(menu.options) == len(gallery.find("face"))
    ranked = [names[item] for item in gallery.find("face")]
    assert ranked.index("face with stuck-out tongue") < ranked.index("kissing face")  # a prefix before a word
    captions = [gallery.caption(item) for item in gallery.find("face")]
    for option, caption in zip(menu.options, captions):  # what tells two alike apart comes first
        assert option == caption if captions.count(caption) == 1 else option.startswith("source ")

    search(app, ".*[(")  # matched literally: nothing matches, the query stays
    assert not app.exception and app.session_state["query_id"] == best and "No gallery image matches." in messages(app)
    assert app.selectbox(key="query_pick").value is None and app.session_state["query_id"] != default


def test_random_image_clears_the_search_and_the_link_follows(library):
    app = start()
    default = app.session_state["query_id"]
    search(app, "money")
    searched = app.session_state["query_id"]
    app.button(key="query_random").click().run()
    assert not app.exception
    assert app.text_input(key="query_search").value == "" and app.selectbox(key="query_pick").value is None
    drawn = app.session_state["query_id"]
    assert drawn != searched  # a draw is never the query shown: the click always changes the page
    assert app.query_params.get("query") == (None if drawn == default else str(drawn))


def test_an_upload_clears_the_search_and_leaves_no_query_in_the_link(library):
    app = start()
    search(app, "hugging face")
    assert "query" in app.query_params
    app.radio(key="query_mode").set_value("upload").run()
    app.file_uploader(key="query_upload").set_value(("red.png", red_png(), "image/png")).run()
    assert not app.exception and not app.error
    assert "query" not in app.query_params and "mode" not in app.query_params
    assert UPLOAD_NOT_LINKED in messages(app)  # said beside the upload, in plain words
    app.session_state["share_popover"] = True
    app.run()
    assert any(UPLOAD_NOT_LINKED in str(warning.value) for warning in app.warning)  # and in the Share box
    assert app.code and not any("query=" in code.value for code in app.code)  # the link to copy
    app.radio(key="query_mode").set_value("gallery").run()  # back to the gallery: the old search is gone
    assert app.text_input(key="query_search").value == "" and app.selectbox(key="query_pick").value is None
