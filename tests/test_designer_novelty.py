"""Near-duplicate rejection (designer/novelty.py) and its measured threshold."""

from __future__ import annotations

import pytest

from spade_envs.designer import novelty
from spade_envs.designer.novelty import NoveltyIndex, Signature, normalized_tokens
from spade_envs.designer.novelty_measure import VARIANTS, measure
from spade_envs.registry.catalog import seed_records


@pytest.fixture(scope="module")
def seeds():
    return [(r.env_id.base, r.source) for r in seed_records()]


@pytest.fixture(scope="module")
def seed_index(seeds):
    return NoveltyIndex.from_sources(seeds)


def test_normalization_ignores_names_constants_comments_and_layout():
    a = "def f(x):\n    '''doc'''\n    return x + 1  # one\n"
    b = "def g(  y ):\n    return y+2\n\n\n"
    assert normalized_tokens(a) == normalized_tokens(b)
    assert "ID" in normalized_tokens(a) and "NUM" in normalized_tokens(a)
    assert normalized_tokens("def f(:\n") == ["def", "f", "(", ":"]  # unparsable: raw tokens, no raise


@pytest.fixture(scope="module")
def measured():
    return measure()


def test_threshold_separates_seeds_from_their_variants(measured):
    m = measured
    n = len(seed_records())
    assert n >= 24 and m["seeds"] == n
    assert m["distinct_pairs"] == n * (n - 1) // 2 and m["variants"] == n * len(VARIANTS)
    assert m["distinct_flagged"] == 0
    assert m["variant_missed"] == 0
    # the threshold sits inside the measured gap with a margin on both sides
    assert m["distinct_code_max"] + 0.05 < novelty.CODE_THRESHOLD < m["variant_code_min"] - 0.05
    assert m["distinct_text_max"] < novelty.TEXT_THRESHOLD


@pytest.mark.parametrize("kind", sorted(VARIANTS))
def test_every_variant_kind_is_rejected(seed_index, seeds, kind):
    for key, source in seeds[::5]:
        ok, detail = seed_index.check(VARIANTS[kind](source))
        assert not ok, (kind, key, detail)
        assert key in detail and "near-duplicate" in detail


def test_distinct_seeds_are_accepted(seed_index, seeds):
    # each seed against the index of all the others
    for key, source in seeds:
        ok, detail = seed_index.check(source, exclude=[key])
        assert ok, (key, detail)
        assert not seed_index.check(source)[0]  # but not against itself


def test_exact_copy_and_empty_index():
    _, source = seed_records()[0].env_id.base, seed_records()[0].source
    assert NoveltyIndex().check(source)[0]
    index = NoveltyIndex.from_sources([("a", source)])
    assert len(index) == 1 and "a" in index
    assert index.check(source) == (False, index.check(source)[1])
    assert Signature.of(source).similarity(Signature.of(source)) == (1.0, 1.0)
