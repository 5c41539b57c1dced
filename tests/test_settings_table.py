"""Adding a setting to the explorer is one row of the table of settings
(anchordiv.explorer.settings.SETTINGS) plus the lines that use its value: its widget, its link
parameter, its typed value in the part's frozen state and its keeping all come from the row. Here a
test adds a sidebar setting and a page setting, through streamlit.testing.v1.AppTest."""
from __future__ import annotations

import dataclasses

import pytest

from app_pages import open_page
from anchordiv.app.session_keys import SIDEBAR_STATE
from anchordiv.explorer import links
from anchordiv.explorer.setting import EVERY_RUN, PERSISTED, Setting
from anchordiv.explorer.settings import SETTINGS, SIDEBAR, VIEW, part_values
from helpers import needs_builtin

pytestmark = needs_builtin

# A sidebar setting, drawn with the rest of the sidebar's geometry (the sidebar draws its part whole),
# and a setting of the Explore view; each only a row.
SHARPNESS = Setting("sharpness", 2, SIDEBAR, "integer", "Sharpness (a setting a test adds)", widget="number_input",
                    low=1, high=5, param="sharpness", old_params=("sharp",), kept=PERSISTED)
GLOW = Setting("glow", "dim", VIEW, "choice", "Glow (a setting a test adds)", widget="radio",
               options=("dim", "bright"), option_labels={"dim": "Dim glow", "bright": "Bright glow"}, param="glow",
               kept=EVERY_RUN)


@pytest.fixture
def added(monkeypatch):
    """The table with the two rows added (as a row written in the table is: at its end)."""
    for row in (SHARPNESS, GLOW):
        monkeypatch.setitem(SETTINGS, row.key, row)


def test_a_sidebar_row_is_drawn_read_from_a_link_typed_in_the_state_and_written_in_the_link(added, library):
    app = open_page({"sharp": "4"})  # its old name, read as the parameter
    assert not app.exception, app.exception
    widget = app.sidebar.number_input(key=SHARPNESS.key)
    assert (widget.label, widget.value, widget.min, widget.max) == (SHARPNESS.label, 4, 1, 5)
    settings = app.session_state[SIDEBAR_STATE].settings
    assert settings.sharpness == 4 and type(settings.sharpness) is int
    assert app.query_params["sharpness"] == "4" and "sharp" not in app.query_params  # written under its name
    widget.set_value(3).run()
    assert not app.exception, app.exception
    assert app.session_state[SIDEBAR_STATE].settings.sharpness == 3 and app.query_params["sharpness"] == "3"
    app.switch_page("views/report.py").run()  # no sidebar: its widget keeps its value (PERSISTED)
    app.switch_page("views/explore.py").run()
    assert app.sidebar.number_input(key=SHARPNESS.key).value == 3


def test_a_value_the_row_does_not_allow_is_named_and_the_default_kept(added, library):
    app = open_page({"sharpness": "9"})
    assert not app.exception, app.exception
    assert app.session_state[SIDEBAR_STATE].settings.sharpness == SHARPNESS.default
    assert any("sharpness" in box.value for box in app.warning), [box.value for box in app.warning]


def test_a_view_row_travels_in_the_link_and_is_kept_between_pages(added, library):
    """The Explore view's row, with no line of any page using it: the link reads it into the
    view's state and the page's link keeps it, through a visit to another page."""
    app = open_page({"glow": "bright"})
    assert not app.exception, app.exception
    assert part_values((VIEW,), app.session_state).glow == "bright"
    assert app.query_params["glow"] == "bright"
    app.switch_page("views/compare.py").run()
    assert not app.exception, app.exception
    app.switch_page("views/explore.py").run()
    assert app.query_params["glow"] == "bright" and part_values((VIEW,), app.session_state).glow == "bright"


def test_its_use_is_one_line_a_widget_drawn_from_the_row_and_its_typed_value(added):
    """A page that uses the view's new row: one line draws its widget (label, options, the words shown
    for each), and the view's frozen state holds its value."""
    from streamlit.testing.v1 import AppTest

    def page():
        import streamlit as st

        from anchordiv.app.setting_widgets import setting_widget
        from anchordiv.app.url_state import part_settings
        from anchordiv.explorer.settings import VIEW

        setting_widget(st, "glow")
        st.session_state["_read"] = part_settings(VIEW)

    app = AppTest.from_function(page).run()
    radio = app.radio(key=GLOW.key)
    assert (radio.label, radio.options, radio.value) == (GLOW.label, ["Dim glow", "Bright glow"], "dim")
    radio.set_value("bright").run()
    view = app.session_state["_read"]
    assert view.glow == "bright"
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.glow = "dim"
    assert links.write_link(app.session_state, links.fields_of(VIEW)) == {"glow": "bright"}
