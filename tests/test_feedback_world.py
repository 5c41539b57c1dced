"""The Explore page's learner on the built-in world, through the page's own path (issue 50): marks
that share the query's object put the weight on object names, marks that share its style on
styles, and marks at odds are answered "too few to tell"; the default vocabulary offers no vendor
name as a style. Queries come from the training split (the held-out one is the benchmark's)."""
import numpy as np
import pytest

from anchordiv.benchmarks.feedback import Vocabulary, draw_cases, learn_as_the_page_does, own_terms
from anchordiv.explorer.settings import GEOMETRY
from anchordiv.explorer.vocabulary import default_vocabulary, gallery_sample, panel_vocabulary

SEED = 11
# Reading the world and encoding its 1,649 terms take about 10 s once for the module; each test is ~1 s.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def page():
    from anchordiv.encoders.builtin import load_builtin_encoder
    from anchordiv.gallery import world_gallery
    from anchordiv.prompts import default_choice, encode_anchors

    encoder = load_builtin_encoder()
    gallery = world_gallery(encoder, "all")
    terms, kinds = panel_vocabulary(default_vocabulary(encoder.name))
    vocabulary = Vocabulary("default", terms, kinds, encode_anchors(encoder, terms, default_choice(encoder)))
    ids = gallery_sample(len(gallery))
    train = np.flatnonzero(gallery.labels["split"].to_numpy() == "train")
    return gallery, ids, gallery.embeddings[ids], vocabulary, train


def test_the_default_vocabulary_offers_no_vendor_name_as_a_style(page):
    vocabulary = page[3]
    styles = [term for term, kind in zip(vocabulary.terms, vocabulary.kinds) if kind == "style"]
    assert styles == ["pencil sketch", "pixel art", "oil painting", "neon on black", "watercolor painting"]
    assert not {"google", "twitter"} & set(vocabulary.terms)


@pytest.mark.parametrize("task", ["object", "style"])
def test_three_marks_of_one_kind_put_most_weight_on_that_kind_with_the_query_s_own_term_in_the_top_3(page, task):
    gallery, ids, rows, vocabulary, train = page
    kind_of = dict(zip(vocabulary.terms, vocabulary.kinds))
    for query, marks in draw_cases(gallery.labels, train, task, 3, 2, SEED):
        learned = learn_as_the_page_does(gallery, ids, rows, GEOMETRY.scale, vocabulary, query, marks)
        on_kind = sum(weight for term, weight in zip(learned.terms, learned.weights) if kind_of[term] == task)
        assert learned.decided and learned.kind == task and on_kind > 0.5, (gallery.caption(query), learned.terms[:5])
        assert set(learned.terms[:3]) & own_terms(gallery.labels, query, task), (gallery.caption(query), learned.terms[:5])


def test_marks_at_odds_are_too_few_to_tell(page):
    """Two marks of the query's emoji in other styles and two of its style on other emoji share
    nothing with the query all together."""
    gallery, ids, rows, vocabulary, train = page
    for query, marks in draw_cases(gallery.labels, train, "mixed", 4, 2, SEED):
        learned = learn_as_the_page_does(gallery, ids, rows, GEOMETRY.scale, vocabulary, query, marks)
        assert not learned.decided, (gallery.caption(query), [gallery.caption(item) for item in marks])
