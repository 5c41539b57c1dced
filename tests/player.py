"""The Explore page's p player as AppTest sees it: its data (what the browser receives) and a
release of p (what the browser sends), through AppTest's own run step.

AppTest cannot drive a browser component, so :func:`release_p` sends what the component's
JavaScript sends on release, the state value ``{"p": p}``, beside every other widget's state; the
app's real callback takes it from there. Both ways are docs/design.md §13, "The p player's
protocol". The component itself is driven in real Chromium by tests/test_browser.py."""
from __future__ import annotations

import json

PLAYER = "anchordiv.p_player"


def player_element(app):
    """The p player's element of the last run."""
    found = [element for element in app.get("bidi_component") if element.proto.component_name == PLAYER]
    assert len(found) == 1, f"expected one p player, found {len(found)}"
    return found[0]


def player_data(app) -> dict:
    """The data the page sent the p player on its last run."""
    return json.loads(player_element(app).proto.json)


def release_p(app, p: float):
    """Run the app as after a release of the player at ``p``."""
    return report_state(app, p=p)


def report_state(app, **values):
    """Run the app as after the player reported ``values`` (``p=...``, ``marks=[...]``): the
    component's state and every other widget's, through AppTest's run step (a private method of
    streamlit.testing; the only way in for an element it cannot drive)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    states = app._tree.get_widget_states()
    states.widgets.append(WidgetState(id=player_element(app).proto.id, json_value=json.dumps(values)))
    return app._run(states)


def grid_at(data: dict, p: float) -> list[int]:
    """The gallery ids the player shows at the path's step nearest ``p``."""
    step = min(range(len(data["p"])), key=lambda index: abs(data["p"][index] - p))
    return [data["items"][index]["id"] for index in data["order"][step]]
