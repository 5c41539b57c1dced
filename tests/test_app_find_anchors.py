"""The Explore page's "Find anchors" section through streamlit.testing.v1.AppTest, on the small slice
of the built-in world: the suggestions are the library's, one click makes them set A, marks made on
a query teach a geometry whose weights sit on the style phrase and which changes the grid, every
refused input is an error box that loses no mark, and a vocabulary is encoded once."""
from __future__ import annotations

import re

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app import cached
from app_pages import APP, TIMEOUT
from helpers import needs_weights
from anchordiv.explorer.feedback import MAX_MARKS
from anchordiv.grids import readable_value
from markup import plain
from test_app import AppTest, neighbours

pytestmark = needs_weights

QUERY = 7  # smiling face with halo, oil painting: 16 oil paintings in the slice
STYLES = set(ad.load_vocabulary("builtin-world-styles"))


def start(query: int = QUERY, k: int = 30) -> AppTest:
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.session_state["query_id"] = query
    app.session_state["top_k"] = k
    # The section, and "why this neighbour?" with its pull/push tables, opened (closed, neither is built).
    app.session_state["find_open"] = app.session_state["explain_open"] = True
    app.run()
    assert not app.exception, app.exception
    return app


def table(app: AppTest, column: str):
    """The section's table with a column ``column``: "probability" (the tilt's), "score" (the
    neighbourhood's separating terms) or "weight" (the learned geometry)."""
    return next(frame.value for frame in app.dataframe if column in frame.value.columns)


def errors(app: AppTest) -> str:
    return " ".join(plain(str(box.value)) for box in app.error)


def marked_options(app: AppTest) -> list[int]:
    """The gallery ids the "like the query" menu offers (its labels start with ``#id``)."""
    return [int(re.match(r"#(\d+) ", label).group(1)) for label in app.multiselect(key="find_like").options]


def same_style(library, ids: list[int], query: int = QUERY) -> list[int]:
    styles = library["gallery"].labels["style"]
    return [item for item in ids if styles.iloc[item] == styles.iloc[query]]


def test_closed_the_section_computes_nothing(library, monkeypatch):
    """Collapsed (as a page opens), the section ranks no vocabulary: its tables would cost every move of p."""
    monkeypatch.setattr(cached, "suggested_terms", lambda *args, **kwargs: pytest.fail("computed while closed"))
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not app.exception and any(expander.label.startswith("Find anchors") for expander in app.expander)
    assert not [element for element in app.multiselect if element.key == "find_like"]


def test_the_section_shows_the_librarys_suggestions_and_pull_push_terms(library):
    app = start()
    assert any(expander.label.startswith("Find anchors") for expander in app.expander)
    encoder, gallery = library["encoder"], library["gallery"]
    vocabulary = ad.load_vocabulary("builtin-world")
    terms, probabilities = ad.suggest_anchors(encoder, gallery.embeddings[QUERY], vocabulary, 10)
    shown = table(app, "probability")
    assert shown["term"].tolist() == terms
    np.testing.assert_allclose(shown["probability"], probabilities, rtol=1e-4)
    cosine = neighbours(app, "cosine")
    apart_terms, scores = ad.separating_terms(encoder, gallery.rows(cosine), gallery.embeddings, vocabulary, 10)
    apart = table(app, "score")
    assert apart["term"].tolist() == apart_terms
    np.testing.assert_allclose(apart["score"], scores, rtol=1e-4, atol=1e-9)
    neighbour = neighbours(app)[0]
    pair = ad.pair_terms(encoder, gallery.embeddings[QUERY], gallery.embeddings[neighbour], vocabulary, 8, scale=10.0)
    pull, push = (next(element.value for element in app.table if element.value.columns[0].startswith(way))
                  for way in ("pull", "push"))
    assert [plain(term) for term in pull.index] == list(pair.pull_terms)
    np.testing.assert_allclose(pull.iloc[:, 0], pair.pull_scores, atol=1e-4)
    assert [plain(term) for term in push.index] == list(pair.push_terms)
    np.testing.assert_allclose(push.iloc[:, 0], pair.push_scores, atol=1e-4)
    said = " ".join(caption.value for caption in app.caption)
    assert f"KL(p_q ‖ p_n) = {readable_value(pair.divergence, divergence=True)}," in said
    assert "not over the geometry's anchors" in said  # one name for one number: said how it differs
    assert not app.error


def test_use_as_a_makes_the_suggestions_set_a(library):
    app = start()
    suggested = table(app, "score")["term"].tolist()
    before = neighbours(app)
    app.button(key="find_apart_a").click().run()
    assert not app.exception, app.exception
    assert app.session_state["anchors_a"] == "\n".join(suggested)
    assert app.text_area(key="anchors_a").value == "\n".join(suggested)
    assert neighbours(app) != before


def test_marks_of_one_style_teach_a_geometry_on_that_style(library):
    app = start()
    marked = same_style(library, marked_options(app))[:5]
    assert len(marked) == 5
    app.multiselect(key="find_like").set_value(marked).run()
    app.button(key="find_learn").click().run()
    assert not app.exception and not app.error, (app.exception, errors(app))
    learned = table(app, "weight")
    assert learned["term"].iloc[0] in STYLES, learned.head()
    assert learned.loc[learned["term"].isin(STYLES), "weight"].sum() > 0.5, learned.head(10)
    assert learned["weight"].sum() == pytest.approx(1.0, abs=1e-3)
    summary = " ".join(plain(element.value) for element in app.markdown)
    assert f"is on 1 term: {learned['term'].iloc[0]}." in summary or "Most of the weight" in summary, summary
    before = neighbours(app)
    app.button(key="find_learned_a").click().run()
    assert not app.exception and not app.error, (app.exception, errors(app))
    lines = app.session_state["anchors_a"].splitlines()
    assert lines[0].split("\t") == [learned["term"].iloc[0], f"{learned['weight'].iloc[0]:.4g}"]
    assert len(lines) == len(learned)
    assert neighbours(app) != before


def test_a_click_on_an_image_of_the_player_marks_it(library):
    """The player's toggles report the query's "like" list; it becomes the marks Find anchors shows
    (the page runs again whole) and the player's toggles show; what a client might send beyond gallery
    ids is ignored, and one more than the most marks is cut."""
    from player import player_data, report_state

    app = start()
    grid = [item["id"] for item in player_data(app)["items"]][:3]
    report_state(app, marks=grid)
    assert not app.exception and app.multiselect(key="find_like").value == grid
    assert player_data(app)["marks"] == {"like": grid, "enabled": True}
    report_state(app, marks=[grid[0], "7", -1, True, 10**9, 2.5, grid[0]])
    assert not app.exception and app.multiselect(key="find_like").value == [grid[0]]
    report_state(app, marks=list(range(100)))
    assert len(player_data(app)["marks"]["like"]) == MAX_MARKS and not player_data(app)["marks"]["enabled"]
    report_state(app, marks=[])
    assert app.multiselect(key="find_like").value == [] and player_data(app)["marks"]["like"] == []


def test_marks_are_kept_per_query_and_cleared(library):
    app = start()
    first = marked_options(app)[:2]
    app.multiselect(key="find_like").set_value(first).run()
    app.session_state["query_id"] = 30
    app.run()
    assert app.multiselect(key="find_like").value == []
    app.multiselect(key="find_unlike").set_value(marked_options(app)[:1]).run()
    app.multiselect(key="find_like").set_value(marked_options(app)[1:3]).run()
    assert "Marks kept for 2 queries" in " ".join(caption.value for caption in app.caption)
    app.session_state["query_id"] = QUERY
    app.run()
    assert app.multiselect(key="find_like").value == first
    app.button(key="find_clear").click().run()
    assert app.multiselect(key="find_like").value == []
    assert "Marks kept for 0 queries" in " ".join(caption.value for caption in app.caption)


def test_what_cannot_be_learned_is_an_error_box_and_loses_no_mark(library, monkeypatch):
    app = start()
    app.button(key="find_learn").click().run()
    assert "no gallery item is marked" in errors(app)
    options = marked_options(app)
    app.multiselect(key="find_like").set_value(options[:3]).run()
    app.multiselect(key="find_unlike").set_value(options[2:4]).run()
    app.button(key="find_learn").click().run()
    assert f"#{options[2]}" in errors(app) and "both" in errors(app), errors(app)
    app.multiselect(key="find_unlike").set_value(options[3:4]).run()
    app.selectbox(key="find_vocabulary").set_value("own").run()
    app.text_area(key="find_own_terms").set_value("oil painting\n").run()
    app.button(key="find_learn").click().run()
    assert "nothing to weigh" in errors(app), errors(app)
    app.text_area(key="find_own_terms").set_value("\n".join(f"term {i}" for i in range(2001))).run()
    assert "at most 2,000" in errors(app), errors(app)
    app.text_area(key="find_own_terms").set_value("oil painting\npixel art\nsmiling face with halo\n").run()

    def fail(*args, **kwargs):
        raise RuntimeError("a stand-in for a failing fit")

    monkeypatch.setattr(ad.FeedbackAnchors, "fit", fail)
    app.button(key="find_learn").click().run()
    assert "the fit failed" in errors(app), errors(app)
    assert not app.exception, app.exception
    assert app.multiselect(key="find_like").value == options[:3]
    assert app.multiselect(key="find_unlike").value == options[3:4]


def test_a_vocabulary_is_encoded_once_across_reruns(library, monkeypatch):
    from anchordiv.encoders.builtin import BuiltinEncoder

    terms = [f"{style} of a sunflower field" for style in sorted(STYLES)] + ["a quiet harbour at dawn"]
    calls = []
    original = BuiltinEncoder.encode_texts

    def counting(self, texts, *args, **kwargs):
        if set(texts) & set(terms):
            calls.append(list(texts))
        return original(self, texts, *args, **kwargs)

    monkeypatch.setattr(BuiltinEncoder, "encode_texts", counting)
    app = start()
    app.selectbox(key="find_vocabulary").set_value("own").run()
    app.text_area(key="find_own_terms").set_value("\n".join(terms)).run()
    app.run()
    app.selectbox(key="explain_rank").set_value(2).run()
    app.multiselect(key="find_like").set_value(same_style(library, marked_options(app))[:3]).run()
    app.button(key="find_learn").click().run()
    assert not app.exception and not app.error, (app.exception, errors(app))
    assert table(app, "probability")["term"].isin(terms).all()
    assert len(calls) == 1, calls


def test_on_a_gallery_store_a_file_from_the_data_roots_suggests_and_learns_on_a_sample(library, tmp_path, monkeypatch):
    """A store is read as a fixed sample of its rows (here the last 10 of 30, in place of the 20,000 of a
    large store) plus the marked rows, which lie outside the sample."""
    from anchordiv.explorer import vocabulary
    from anchordiv.store import GalleryStore
    from test_browser import small_store

    root = small_store(tmp_path / "data")  # 30 squares: blue, green and red (rows 20-29), the first query blue
    (root / "lists").mkdir()
    (root / "lists" / "colours.txt").write_text("red\nblue\ngreen\nyellow\n")
    monkeypatch.setenv("ANCHORDIV_DATA_ROOTS", str(root))
    monkeypatch.delenv("ANCHORDIV_ALLOW_ANY_PATH", raising=False)
    monkeypatch.setattr(vocabulary, "gallery_sample", lambda n_items: np.arange(n_items - 10, n_items))
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.session_state["find_open"] = True
    app.run()
    app.radio(key="gallery_kind").set_value("store").run()
    app.selectbox(key="store_choice").set_value(str((root / "stores" / "shapes").resolve())).run()
    app.selectbox(key="find_vocabulary").set_value("file").run()
    app.selectbox(key="find_file").set_value(str((root / "lists" / "colours.txt").resolve())).run()
    assert not app.exception and not app.error, (app.exception, errors(app))
    assert set(table(app, "probability")["term"]) == {"red", "blue", "green", "yellow"}
    assert "(10 images, a fixed sample)" in " ".join(caption.value for caption in app.caption)
    labels = [re.match(r"#\d+ (\w+)", label).group(1) for label in app.multiselect(key="find_like").options]
    blue = [item for item, label in zip(marked_options(app), labels) if label.startswith("blue")][:3]
    assert len(blue) == 3 and max(blue) < 20
    app.multiselect(key="find_like").set_value(blue).run()
    app.button(key="find_learn").click().run()
    assert not app.exception and not app.error, (app.exception, errors(app))
    rows = GalleryStore.open(root / "stores" / "shapes").rows(np.arange(30))
    terms = ["red", "blue", "green", "yellow"]
    read = [*range(20, 30), *sorted(blue)]
    fitted = ad.FeedbackAnchors(scale=10.0, seed=0).fit(library["encoder"].encode_texts(terms), rows[[0]], rows[read],
                                                        [[read.index(item) for item in blue]])
    expected = {term: weight for term, weight in zip(terms, fitted.weights_) if weight > 0}
    learned = table(app, "weight")
    assert dict(zip(learned["term"], learned["weight"])) == pytest.approx(expected, abs=1e-3)


def test_hostile_terms_are_shown_as_text(library):
    from test_hostile_app import HOSTILE, check_page, echoed

    terms = [text for name, text in HOSTILE.items() if name != "long"]  # so the learned table shows them
    app = start()
    app.selectbox(key="find_vocabulary").set_value("own").run()
    app.text_area(key="find_own_terms").set_value("\n".join(terms)).run()
    app.multiselect(key="find_like").set_value(same_style(library, marked_options(app))[:5]).run()
    app.button(key="find_learn").click().run()
    assert not app.error, errors(app)
    assert echoed(app)
    assert check_page(app, "explore") == []


def test_a_learned_set_too_long_for_the_text_area_is_refused_not_cut(library, monkeypatch):
    from dataclasses import replace

    from anchordiv.explorer.settings import SETTINGS

    monkeypatch.setitem(SETTINGS, "anchors_a", replace(SETTINGS["anchors_a"], max_chars=12))
    app = start()
    app.multiselect(key="find_like").set_value(same_style(library, marked_options(app))[:5]).run()
    app.button(key="find_learn").click().run()
    before = app.session_state["anchors_a"]
    app.button(key="find_learned_a").click().run()
    assert not app.exception, app.exception
    assert app.session_state["anchors_a"] == before
    assert "set A holds at most 12" in errors(app) and "Download it" in errors(app), errors(app)


def test_a_vocabulary_file_is_read_once_per_version(library, tmp_path, monkeypatch):
    from anchordiv.explorer import vocabulary

    reads = []
    original = vocabulary.read_vocabulary_file
    monkeypatch.setattr(vocabulary, "read_vocabulary_file", lambda path: reads.append(path) or original(path))
    root = tmp_path / "data"
    (root / "lists").mkdir(parents=True)
    listed = root / "lists" / "colours.txt"
    listed.write_text("red\nblue\ngreen\n")
    monkeypatch.setenv("ANCHORDIV_DATA_ROOTS", str(root))
    monkeypatch.delenv("ANCHORDIV_ALLOW_ANY_PATH", raising=False)
    app = start()
    app.selectbox(key="find_vocabulary").set_value("file").run()
    app.selectbox(key="find_file").set_value(str(listed.resolve())).run()
    app.run()
    assert not app.exception and not app.error, (app.exception, errors(app))
    assert set(table(app, "probability")["term"]) == {"red", "blue", "green"}
    assert len(reads) == 1, reads
    listed.write_text("red\nblue\ngreen\nyellow\n")  # another size: another version
    app.run()
    assert set(table(app, "probability")["term"]) == {"red", "blue", "green", "yellow"}
    assert len(reads) == 2, reads


def test_a_query_past_the_most_marked_ones_cannot_be_marked(library):
    from anchordiv.explorer.feedback import MAX_MARKED_QUERIES, QueryMarks

    app = start()
    app.multiselect(key="find_like").set_value(marked_options(app)[:1]).run()
    kept = next(iter(app.session_state["_find_marks"].values()))
    embeddings = library["gallery"].embeddings
    for query in range(40, 40 + MAX_MARKED_QUERIES - 1):
        kept[f"#{query}"] = QueryMarks(np.asarray(embeddings[query]), query, f"#{query}", (query + 1,))
    app.session_state["query_id"] = 30
    app.run()
    assert app.multiselect(key="find_like").disabled and app.multiselect(key="find_unlike").disabled
    assert f"{MAX_MARKED_QUERIES} queries already have marks" in " ".join(box.value for box in app.warning)
    assert f"Marks kept for {MAX_MARKED_QUERIES} queries" in " ".join(caption.value for caption in app.caption)
    app.session_state["query_id"] = QUERY
    app.run()
    assert not app.multiselect(key="find_like").disabled and not app.warning


def test_a_learned_geometry_out_of_date_is_said_and_not_offered(library):
    stale = "changed since these weights were learned"

    def current(app: AppTest) -> bool:
        """Whether the learned geometry is shown as current (its table and its "Use as A")."""
        infos = " ".join(box.value for box in app.info)
        shown = any("weight" in frame.value.columns for frame in app.dataframe)
        offered = "find_learned_a" in [button.key for button in app.button]
        assert shown == offered == (stale not in infos), (shown, offered, infos)
        return shown

    app = start()
    marked = same_style(library, marked_options(app))[:4]
    app.multiselect(key="find_like").set_value(marked).run()
    app.button(key="find_learn").click().run()
    assert not app.exception and not app.error, (app.exception, errors(app))
    assert current(app)
    app.slider(key="scale").set_value(20.0).run()
    assert not current(app)
    app.slider(key="scale").set_value(10.0).run()
    assert current(app)
    app.multiselect(key="find_like").set_value(marked[:3]).run()
    assert not current(app)
    app.multiselect(key="find_like").set_value(marked).run()
    app.selectbox(key="find_vocabulary").set_value("own").run()
    app.text_area(key="find_own_terms").set_value("oil painting\npixel art\n").run()
    assert not current(app)
    app.selectbox(key="find_vocabulary").set_value("auto").run()
    assert current(app)
