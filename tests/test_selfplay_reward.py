"""The designer's reward and the replay rules (fast, no model): no usable hint -> regret 0,
step timeouts, hinted plays made once, per-skill centring and SPADE's scale, eviction
that keeps the just-proposed candidate, ``envs_per_round`` as a cap, stored scores from
the actual plays, and the learning bench's held-out tasks."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from spade_envs.selfplay.presets import preset
from spade_envs.selfplay.replay_buffer import ReplayBuffer, ReplayEntry
from spade_envs.selfplay.rewards import (LedgerEntry, DesignerLedger, agent_reward, finalize_rewards,
                                         spade_designer_scale)


def _no_hint_fake(hint_once: bool = False):
    """The trainer tables ``settle_env`` and ``estimate`` read: k1 has no usable hint, k2 has one."""
    buf = ReplayBuffer()
    buf.add(ReplayEntry("k1", source="a", hint_usable=False))
    buf.add(ReplayEntry("k2", source="b", hint_usable=True))
    led = DesignerLedger("regret", play_window=1)
    led.add(LedgerEntry("a", "g", 0, True, "k1", skill="s", hint_usable=False))
    led.add(LedgerEntry("b", "g", 0, True, "k2", skill="s", hint_usable=True))
    return SimpleNamespace(config=SimpleNamespace(hint_once=hint_once), hint_cache={}, plays={}, estimates={},
                           buffer=buf, ledger=led)


def test_environment_without_usable_hint_has_regret_zero():
    """The rule holds in all three places that settle regret (the ledger, the round's
    per-environment settlement and the registry's stored scores): the "hinted" plays of an
    environment without a usable hint win by noise and still give regret 0."""
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    tr = _no_hint_fake()
    no_hint = SelfPlayTrainer.settle_env(tr, tr.buffer.entries["k1"], [0.0, 0.0], [1.0, 1.0])
    hinted = SelfPlayTrainer.settle_env(tr, tr.buffer.entries["k2"], [0.0, 0.0], [1.0, 1.0])
    # the round: regret to the metrics, the replay priority and the checkpointed estimates
    assert no_hint.regret == 0.0 and hinted.regret == pytest.approx(1.0)
    assert tr.buffer.entries["k1"].regrets == [0.0] and tr.buffer.entries["k2"].regrets == [pytest.approx(1.0)]
    assert tr.estimates["k1"]["regret"] == 0.0 and tr.estimates["k2"]["regret"] == pytest.approx(1.0)
    # the ledger (the designer's reward), fed by the same settlement
    a, b = tr.ledger.candidates["a"], tr.ledger.candidates["b"]
    assert a.regret == 0.0 and a.reward == 0.0
    assert b.regret == pytest.approx(1.0) and b.reward == pytest.approx(1.0)
    # the stored scores, from every play kept so far
    assert SelfPlayTrainer.estimate(tr, "k1").regret == 0.0
    assert SelfPlayTrainer.estimate(tr, "k2").regret == pytest.approx(1.0)


def test_hint_once_reuses_the_cached_hint_only_where_it_is_usable():
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    tr = _no_hint_fake(hint_once=True)
    tr.hint_cache["k1"] = [1.0, 1.0]  # even a cached "hint" of k1 must not count
    out = SelfPlayTrainer.settle_env(tr, tr.buffer.entries["k1"], [0.0, 0.0], [])
    assert out.regret == 0.0 and tr.estimates["k1"]["regret"] == 0.0
    SelfPlayTrainer.settle_env(tr, tr.buffer.entries["k2"], [0.0, 0.0], [1.0, 1.0])
    again = SelfPlayTrainer.settle_env(tr, tr.buffer.entries["k2"], [0.0, 0.0], [])  # hinted plays made once
    assert again.regret == pytest.approx(1.0) and again.win_rate_hint == 1.0


def test_only_the_rule_builds_a_regret_estimate_in_selfplay():
    """No self-play module writes its own copy of the rule: ``regret_estimate`` is the only
    place that builds a ``RegretEstimate``, and the ledger, the round and the stored scores
    all call it."""
    import ast
    from pathlib import Path

    import spade_envs.selfplay as selfplay

    builders, callers = [], set()
    for path in sorted(Path(selfplay.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for node in ast.walk(fn):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                text = ast.unparse(f)
                if text.startswith("RegretEstimate"):
                    builders.append((path.name, fn.name))
                if text.endswith("regret_estimate"):
                    callers.add((path.name, fn.name))
    assert builders == [("rewards.py", "regret_estimate")], builders
    assert {("rewards.py", "_settle"), ("trainer.py", "settle_env"), ("trainer.py", "estimate")} <= callers, callers


def test_blend_without_hint_keeps_only_the_plateau_term():
    led = DesignerLedger("blend", play_window=1)
    led.add(LedgerEntry("a", "g", 0, True, "k", hint_usable=False))
    led.record_plays("k", [1.0, 0.0], [1.0, 1.0])
    assert led.candidates["a"].reward == pytest.approx(0.6)  # 0.4 * 0 + 0.6 * plateau(0.5)


def test_step_timeout_and_hint_once_window():
    led = DesignerLedger("regret", play_window=2, step_timeout_penalty=-0.5)
    led.add(LedgerEntry("t", "g", 0, True, "slow"))
    led.record_plays("slow", [0.0], [], step_timeout=True)
    assert led.candidates["t"].reward == -0.5
    led.add(LedgerEntry("w", "h", 0, True, "k"))
    led.record_plays("k", [0.0, 0.0], [1.0, 1.0])  # round 1: hinted plays made once
    assert led.candidates["w"].reward is None
    led.record_plays("k", [1.0, 1.0], [])  # round 2: plain plays accumulate, hint reused
    w = led.candidates["w"]
    assert w.hint == [1.0, 1.0] and w.plain == [0.0, 0.0, 1.0, 1.0] and w.regret == pytest.approx(0.5)


def test_finalize_rewards_centres_per_skill_without_std_and_scales():
    g1 = [LedgerEntry("a", "g1", 0, True, skill="x", reward=0.9), LedgerEntry("b", "g1", 0, True, skill="x", reward=0.1)]
    g2 = [LedgerEntry("c", "g2", 0, True, skill="y", reward=0.2), LedgerEntry("d", "g2", 0, False, skill="y", reward=0.0)]
    assert finalize_rewards([g1, g2], center="skill", scale=2.0) == pytest.approx([0.8, -0.8, 0.2, -0.2])
    assert finalize_rewards([g1], center="none", scale=1.0) == pytest.approx([0.9, 0.1])
    assert spade_designer_scale(256, 16, 32) == 50.0 and spade_designer_scale(16, 16, 2) == 2.0


def test_agent_reward_rules():
    ep = SimpleNamespace(error=None, actions=["x"], terminated=False, episode_return=0.7)
    assert agent_reward(ep) == 0.7 and agent_reward(ep, unterminated=0.0) == 0.0
    failed = SimpleNamespace(error="worker died", actions=[], terminated=False, episode_return=0.0)
    assert agent_reward(failed, failed=-1.0) == -1.0


def test_eviction_keeps_the_new_candidate_and_protected_ones():
    buf = ReplayBuffer(capacity=2)
    buf.add(ReplayEntry("old", source="a", added_round=0))
    buf.add(ReplayEntry("waiting", source="b", added_round=1))
    assert buf.add(ReplayEntry("new", source="c", added_round=2), protected={"waiting"})
    assert set(buf.entries) == {"waiting", "new"}  # the oldest unprotected one went
    assert not buf.add(ReplayEntry("newer", source="d", added_round=3), protected={"waiting", "new"})
    assert set(buf.entries) == {"waiting", "new"}


def test_envs_per_round_caps_waiting_candidates_too():
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    buf = ReplayBuffer(capacity=16)
    led = DesignerLedger()
    for i in range(5):
        buf.add(ReplayEntry(f"k{i}", source="s", added_round=i))
        led.add(LedgerEntry(f"c{i}", f"g{i}", i, True, f"k{i}"))
    fake = SimpleNamespace(config=SimpleNamespace(envs_per_round=3, replay_share=0.0), ledger=led, buffer=buf, rng=random.Random(0))
    picked = SelfPlayTrainer._pick(fake)
    assert [e.key for e in picked] == ["k0", "k1", "k2"]


def test_replay_share_keeps_slots_for_replay_entries():
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    buf = ReplayBuffer(capacity=16)
    led = DesignerLedger()
    for i in range(3):
        buf.add(ReplayEntry(f"seed{i}", env_id=f"spade/Env-0000{i + 1}-v0"))
    for i in range(5):
        buf.add(ReplayEntry(f"k{i}", source="s", added_round=i))
        led.add(LedgerEntry(f"c{i}", f"g{i}", i, True, f"k{i}"))
    fake = SimpleNamespace(config=SimpleNamespace(envs_per_round=6, replay_share=0.34), ledger=led, buffer=buf,
                           rng=random.Random(0))
    keys = [e.key for e in SelfPlayTrainer._pick(fake)]
    assert keys[:4] == ["k0", "k1", "k2", "k3"] and len(keys) == 6
    assert "k4" not in keys  # two slots stay with replay; the fifth candidate waits


def test_stored_scores_come_from_the_actual_plays():
    from spade_envs.selfplay.registration import Registrar
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    stored = {}
    reg = SimpleNamespace(update_scores=lambda eid, **kw: stored.setdefault(eid, kw))
    eid, seed = "spade/Env-20001-v0", "spade/Env-00001-v0"
    tr = SimpleNamespace(plays={eid: {"plain": [1.0, 0.0, 0.0, 0.0], "hint": [1.0, 1.0, 0.0]},
                                seed: {"plain": [0.0], "hint": [1.0]}}, hint_cache={}, buffer=ReplayBuffer())
    r = Registrar(reg, designer_model="fake", agent_name="policy")
    n = r.store_scores([(key, SelfPlayTrainer.estimate(tr, key)) for key in (eid, seed, "spade/Env-20002-v0")])
    got = stored[eid]
    assert n == 1 and set(stored) == {eid}  # the seed and the unplayed entry are not written
    assert got["win_rate_plain"] == 0.25 and got["win_rate_hint"] == pytest.approx(2 / 3)
    assert got["regret"] == pytest.approx(2 / 3 - 0.25)


def test_spade_preset_follows_the_released_recipe():
    """What the ``spade`` preset sets reaches the parts that act on it: TRL's GRPOConfig
    gets SPADE's optimiser and loss settings (spade-rl/spade train_spade_4b.sh), the
    ledger pays SPADE's delayed designer rewards."""
    pytest.importorskip("trl")
    from spade_envs.selfplay.grpo import grpo_args
    from spade_envs.selfplay.rewards import designer_scale

    c = preset("spade")
    args = grpo_args(c)
    assert (args.beta, args.adam_beta2, args.weight_decay, args.learning_rate) == (0.005, 0.98, 0.1, 1e-6)
    assert (args.epsilon, args.epsilon_high, args.temperature, args.scale_rewards) == (0.2, 0.28, 0.6, "none")
    assert args.num_generations == 16 and args.bf16 and args.use_vllm
    led = DesignerLedger.from_config(c)
    led.add(LedgerEntry("bad", "g", 0, False))  # rejected by acceptance: SPADE pays 0, not a penalty
    led.add(LedgerEntry("slow", "g", 0, True, "k"))
    led.record_plays("k", [0.0], [], step_timeout=True)
    assert led.candidates["bad"].reward == 0.0 and led.candidates["slow"].reward == -0.5
    led.add(LedgerEntry("w", "h", 0, True, "w"))
    for _ in range(31):
        led.record_plays("w", [0.0], [1.0])
    assert led.candidates["w"].reward is None  # SPADE's 32-rollout reward delay
    led.record_plays("w", [0.0], [1.0])
    assert led.candidates["w"].reward == pytest.approx(1.0)
    assert designer_scale(c) == 1.0  # designer rows get their own step: SPADE's mixing scale does not apply
    assert agent_reward(SimpleNamespace(error="boom"), failed=c.failed_play_reward) == -1.0
    assert agent_reward(SimpleNamespace(error=None, terminated=False, episode_return=0.7),
                        unterminated=c.unterminated_reward) == 0.0


def test_learning_bench_heldout_tasks():
    from spade_envs.evals.splits import is_heldout
    from spade_envs.selfplay.learning_bench import heldout_tasks

    tasks, envs = heldout_tasks(96, max_turns=2)
    assert len(tasks) >= 96 and all(is_heldout(t.env_id) for t in tasks)
    assert len({(t.env_id, t.seed) for t in tasks}) == len(tasks)
    again, _ = heldout_tasks(96, max_turns=2)
    assert [(t.env_id, t.seed, t.kwargs) for t in again] == [(t.env_id, t.seed, t.kwargs) for t in tasks]


def test_plain_summary_says_what_happened():
    from spade_envs.selfplay.report import compare_table, plain_summary

    rows = [{"proposed": 4, "valid": 2, "proposed_params": 3, "designer_trained_regret": 0.25, "agent_reward": 0.5,
             "envs_played": 4, "agent_advantages": [0.7, -0.7, 0.0, 0.0], "designer_advantages": [0.0, 0.0],
             "designer_groups_trained": 3, "designer_groups_nonzero_adv": 1}]
    compare = {"episodes": 6, "before": {"wins": 1, "rate": 1 / 6, "ci95": [0.03, 0.56]},
               "after": {"wins": 3, "rate": 0.5, "ci95": [0.19, 0.81]},
               "envs": [{"id": "spade/Env-00012-v0", "kwargs": {"difficulty": 0}, "episodes": 6,
                         "wins_before": 1, "wins_after": 3}]}
    text = plain_summary({"registered": 2, "generations": [1]}, rows, compare)
    assert "proposed 4 environment(s) (3 as parameter variants, 1 as programs)" in text
    assert "2 passed acceptance and 2 were registered" in text and "averaged 0.250" in text
    assert "2 of 4 agent rows and 0 of 2 designer rows were non-zero" in text
    assert "designer groups with a non-zero advantage (not every proposal rewarded alike): 1 of 3" in text
    assert "the designer's mean proposal regret per round: 0.250 (the agent's mean reward per round: 0.500)" in text
    assert "not every role received a learning signal" in text and "won 1 before and 3 after" in text
    table = compare_table(compare)
    assert "spade/Env-00012-v0 difficulty=0" in table and "16.7%" in table and "50.0%" in table
