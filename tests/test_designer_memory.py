"""Designer memory over a temporary registry store (designer/memory.py)."""

from __future__ import annotations

import pytest

from spade_envs.designer.memory import DesignerMemory, MemoryEntry
from spade_envs.registry.store import Registry
from registry_helpers import synthetic_source

SKILL = "logical deduction"
# (index, skill, win_rate_plain, win_rate_hint, regret)
ROWS = [
    (1, SKILL, 0.50, 0.90, 0.40),   # positive, regret 0.40
    (2, SKILL, 0.20, 0.90, 0.70),   # positive, regret 0.70 (best)
    (3, SKILL, 0.85, 1.00, 0.15),   # positive: 0.85 is inside the band
    (4, SKILL, 0.95, 1.00, 0.05),   # too easy
    (5, SKILL, 0.05, 0.10, 0.05),   # too hard
    (6, SKILL, 0.10, 0.60, 0.90),   # too hard despite the highest regret
    (7, "optimization", 0.50, 1.00, 0.99),  # other skill: never a positive here
    (8, "optimization", 1.00, 1.00, 0.00),  # other skill, too easy
    (9, SKILL, None, None, None),  # unscored
]


@pytest.fixture
def store(tmp_path):
    reg = Registry.open(tmp_path / "reg.sqlite3")
    ids = {}
    for i, skill, wr, wh, rg in ROWS:
        res = reg.add(synthetic_source(i, skill=skill), generation=1)
        ids[i] = res.env_id.base
        if wr is not None:
            reg.update_scores(res.env_id, regret=rg, win_rate_hint=wh, win_rate_plain=wr)
    yield reg, ids
    reg.close()


def test_positives_are_same_skill_in_band_ranked_by_regret(store):
    reg, ids = store
    r = DesignerMemory(reg, include_seeds=False).retrieve(SKILL, k_positive=3, k_negative=3)
    assert [e.env_id for e in r.positives] == [ids[2], ids[1], ids[3]]
    assert all(e.band == "positive" and e.skill == SKILL for e in r.positives)
    assert r.format_example is None
    # negatives: same skill first, easy and hard alternating; each says why
    assert [e.env_id for e in r.negatives] == [ids[4], ids[5], ids[6]]
    assert "too easy" in r.negatives[0].why() and "95%" in r.negatives[0].why()
    assert "too hard" in r.negatives[1].why()
    assert "different" in r.instruction and "Echo 1" in r.instruction
    assert r.parent_ids == [ids[2], ids[1], ids[3], ids[4], ids[5], ids[6]]


def test_k_limits_and_fallback_to_other_skills_for_negatives(store):
    reg, ids = store
    mem = DesignerMemory(reg, include_seeds=False)
    r = mem.retrieve(SKILL, k_positive=1, k_negative=1)
    assert [e.env_id for e in r.positives] == [ids[2]]
    assert len(r.negatives) == 1
    r2 = mem.retrieve("optimization", k_positive=2, k_negative=2)
    assert [e.env_id for e in r2.positives] == [ids[7]]
    # its own negative first, then the other skill's
    assert r2.negatives[0].env_id == ids[8] and r2.negatives[1].skill == SKILL


def test_inactive_entries_are_not_examples_and_scores_come_from_the_store(store):
    reg, ids = store
    reg.set_status(ids[2], "deprecated")
    mem = DesignerMemory(reg, include_seeds=False)
    r = mem.retrieve(SKILL, k_positive=3)
    assert ids[2] not in [e.env_id for e in r.positives]
    e1 = next(e for e in mem.entries() if e.env_id == ids[1])
    assert (e1.win_rate_plain, e1.win_rate_hint, e1.regret, e1.status) == (0.5, 0.9, 0.4, "active")


def test_format_example_from_seeds_when_no_positive():
    mem = DesignerMemory(None)  # seeds only: nothing is scored
    r = mem.retrieve("spatial reasoning", mode="puzzle")
    assert not r.positives and not r.negatives
    assert r.format_example is not None and r.format_example.skill == "spatial reasoning"
    tool = mem.retrieve("optimization", mode="tool")
    assert tool.format_example is not None and tool.format_example.mode == "tool"
    assert tool.parent_ids == [tool.format_example.env_id]


def test_novelty_check_covers_store_seeds_and_remembered_entries(store):
    reg, ids = store
    mem = DesignerMemory(reg)
    ok, detail = mem.novelty_check(synthetic_source(1, skill=SKILL).replace("1000", "2000"))
    # the synthetic sources differ only in constants: a duplicate of one of them
    assert not ok and any(i in detail for i in ids.values())
    from spade_envs.registry.catalog import seed_records

    assert not mem.novelty_check(seed_records()[3].source)[0]
    fresh = "class LoneEnv:\n    def reset(self, seed=None):\n        return 'a', {}\n"
    assert mem.novelty_check(fresh)[0]
    mem.remember(MemoryEntry(env_id="spade/Env-09999", source=fresh, skill=SKILL))
    assert not mem.novelty_check(fresh)[0]


def test_band_edges():
    def e(wr):
        return MemoryEntry("x", "", win_rate_plain=wr)

    assert [e(w).band for w in (0.15, 0.85, 0.149, 0.851, None)] == [
        "positive", "positive", "too_hard", "too_easy", "unscored"]
