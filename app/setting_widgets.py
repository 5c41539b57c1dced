"""Each setting's widget, drawn from its row of the table of settings
(:data:`~anchordiv.explorer.settings.SETTINGS`): its Streamlit function, label, help, bounds,
options and the words shown for them, how it looks and whether it keeps its own value; its value
checked first (:mod:`anchordiv.app.widget_checks`). A page gives only what the table cannot know:
what depends on the gallery or the server (a menu's options, a number's default), a callback, or
where the warning about a refused value goes."""
from __future__ import annotations

from typing import Any

from anchordiv.app.session_keys import PERSIST
from anchordiv.app.widget_checks import choice_widget, flag_widget, number_widget, text_widget
from anchordiv.explorer.setting import PERSISTED, Setting
from anchordiv.explorer.settings import SETTINGS


def widget_arguments(setting: Setting, given: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``setting``'s widget beyond its label and options or bounds: its
    help, how it looks, its format and its persistence, then what the page ``given``."""
    arguments: dict[str, Any] = {"help": setting.help, **setting.display}
    if setting.option_labels:
        arguments["format_func"] = setting.format_option
    if setting.kind in ("number", "integer") and setting.step is not None:
        arguments["step"] = setting.step
    if setting.kind == "text" and setting.max_chars is not None:
        arguments["max_chars"] = setting.max_chars
    if setting.kept == PERSISTED:
        arguments["persist_state"] = PERSIST
    return arguments | given


def setting_widget(box: Any, key: str, **given: Any) -> Any:
    """The widget of setting ``key`` in ``box`` (``st``, a column, the sidebar), as its row says,
    ``given`` adding or overriding arguments (``options``: a menu's options where the gallery or
    the server decides them; ``label``); its value as the widget holds it. A choice, a number, a
    flag or a text is checked before it is drawn (a value it cannot hold is named and replaced);
    a list is drawn as it is, the page having checked it (its options are the page's to judge)."""
    setting = SETTINGS[key]
    draw = getattr(box, setting.widget)
    label = given.pop("label", setting.label)
    arguments = widget_arguments(setting, given)
    if setting.kind == "choice":
        return choice_widget(draw, label, arguments.pop("options", setting.options), key=key, **arguments)
    if setting.kind in ("number", "integer"):
        low, high = arguments.pop("bounds") if "bounds" in arguments else setting.bounds
        return number_widget(draw, label, low, high, key=key, **arguments)
    if setting.kind == "flag":
        return flag_widget(draw, label, key=key, **arguments)
    if setting.kind == "text":
        return text_widget(draw, label, key=key, **arguments)
    if setting.kind == "list":
        return draw(label, arguments.pop("options", setting.options), key=key, **arguments)
    return draw(label, key=key, **arguments)  # a file


def draw_part(box: Any, part: str, skipped: tuple[str, ...] = ()) -> None:
    """Every widget of ``part`` in the table's order, but ``skipped``: for a part drawn whole (the
    sidebar's geometry), a row added to the table is drawn with no more lines."""
    for setting in SETTINGS.values():
        if setting.part == part and setting.widget is not None and setting.key not in skipped:
            setting_widget(box, setting.key)

