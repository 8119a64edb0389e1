"""Self-play pieces without a model: config, rewards/advantages, ledger, replay buffer, rollout split."""

from __future__ import annotations

import json
import random

import pytest

from spade_envs.agents.api import Episode, PlayTask
from spade_envs.selfplay.config import SelfPlayConfigError
from spade_envs.selfplay.presets import build_config, preset
from spade_envs.selfplay.replay_buffer import ReplayBuffer, ReplayEntry
from spade_envs.selfplay.rewards import LedgerEntry, DesignerLedger, agent_reward, group_advantages
from spade_envs.selfplay.rollout import SelfPlayRollout, StoredCompletion, agent_prompt, designer_prompt, split_episode
from spade_envs.selfplay.splits import is_heldout


def _ep(ret: float, ids=(1, 2, 3, 4, 5), mask=(0, 0, 1, 0, 1)) -> Episode:
    return Episode(task=PlayTask("spade/Env-00001", 0), messages=[], actions=[], rewards=[ret], episode_return=ret,
                   won=ret >= 1, turns=1, terminated=True, truncated=False, token_ids=list(ids),
                   logprobs=[0.0 if m == 0 else -0.5 for m in mask], mask=list(mask))


def test_presets_follow_spade_recipe_and_overrides(tmp_path):
    pytest.importorskip("trl")
    from spade_envs.selfplay.grpo import grpo_args

    for name in ("gpu-4b", "gpu-8b", "gpu-30b"):
        c = preset(name)
        args = grpo_args(c)  # the settings TRL actually receives
        assert (args.temperature, args.epsilon, args.epsilon_high, args.beta, args.learning_rate) == \
            (0.6, 0.2, 0.28, 0.0, 1e-6)
        assert args.use_vllm and args.bf16 and args.scale_rewards == "none"
        assert c.max_turns <= 25 and c.designer_every == 4
    yml = tmp_path / "c.yaml"
    yml.write_text("preset: cpu-smol\nrounds: 7\nskills: [optimization]\n")
    c = build_config(None, yml, rounds=None, hint_plays="3")
    assert (c.preset, c.model, c.rounds, c.skills, c.hint_plays) == ("cpu-smol", "default", 7, ["optimization"], 3)
    with pytest.raises(SelfPlayConfigError, match="unknown self-play setting"):
        build_config("cpu-tiny", nonsense=1)
    with pytest.raises(SelfPlayConfigError, match="unknown preset"):
        preset("tpu-huge")
    with pytest.raises(SelfPlayConfigError, match=">= 2"):
        build_config("cpu-tiny", agent_group_size=1)


def test_group_advantages_match_hand_computation():
    # group 1: [1, 0] -> mean .5, unbiased std .70711 -> +-0.5/0.70721; group 2: constant -> 0
    adv = group_advantages([1.0, 0.0, 0.5, 0.5], 2)
    assert adv[0] == pytest.approx(0.5 / (2 ** -0.5 + 1e-4)) and adv[1] == pytest.approx(-adv[0])
    assert adv[2:] == [0.0, 0.0]
    # group of 3: [1, 0, 0]: mean 1/3, std sqrt(1/3)
    a3 = group_advantages([1.0, 0.0, 0.0], 3)
    assert a3[0] == pytest.approx((2 / 3) / ((1 / 3) ** 0.5 + 1e-4))
    assert agent_reward(_ep(3.0)) == 1.0 and agent_reward(_ep(-0.25)) == -0.25
    with pytest.raises(ValueError):
        group_advantages([1.0, 2.0, 3.0], 2)


def test_designer_ledger_delays_regret_by_play_window():
    led = DesignerLedger("regret", invalid_penalty=-1.0, play_window=2)
    led.add(LedgerEntry("r0-p0-c0", "r0-p0", 0, True, "src:a"))
    led.add(LedgerEntry("r0-p0-c1", "r0-p0", 0, False, None))
    assert led.candidates["r0-p0-c1"].reward == -1.0
    assert led.pending_keys() == ["src:a"] and led.ready_groups() == []
    led.record_plays("src:a", plain=[0.0, 0.0], hint=[1.0])  # window 1 of 2: not yet known
    assert led.ready_groups() == []
    led.record_plays("src:a", plain=[1.0, 0.0], hint=[1.0])
    (group,) = led.ready_groups()
    # hint mean 1.0, plain mean 0.25 -> regret 0.75
    assert [c.reward for c in group] == [pytest.approx(0.75), -1.0]
    assert group_advantages([c.reward for c in group], 2)[0] > 0
    assert led.candidates == {}
    blend = DesignerLedger("blend", play_window=1)
    blend.add(LedgerEntry("x", "g", 0, True, "k"))
    blend.record_plays("k", plain=[1.0, 0.0], hint=[1.0, 1.0])
    # regret .5 -> share 1 -> .4; win rate .5 -> plateau 1 -> .6
    assert blend.candidates["x"].reward == pytest.approx(1.0)
    again = DesignerLedger.from_json(json.loads(json.dumps(blend.to_json())))
    assert again.candidates["x"].reward == pytest.approx(1.0)


def test_replay_buffer_priorities_heldout_and_persistence(tmp_path):
    buf = ReplayBuffer(capacity=3, recent=2, temperature=0.5, min_priority=0.05)
    ids = [f"spade/Env-{n:05d}" for n in range(1, 40)]
    held = next(i for i in ids if is_heldout(i))
    train = [i for i in ids if not is_heldout(i)][:4]
    assert not buf.add(ReplayEntry(key=held, env_id=held))
    for i in train[:3]:
        assert buf.add(ReplayEntry(key=i, env_id=i))
    buf.record(train[0], 0.9)
    buf.record(train[0], 0.7)
    buf.record(train[0], 0.5)  # only the last 2 count
    assert buf.priority(buf.entries[train[0]]) == pytest.approx(0.6)
    picks = [buf.sample(1, random.Random(s))[0].key for s in range(200)]
    assert picks.count(train[0]) > 150  # 0.6^2 vs 0.05^2
    buf.add(ReplayEntry(key=train[3], env_id=train[3]))  # full: evicts a lowest-priority entry
    assert len(buf) == 3 and train[0] in buf
    buf.save(tmp_path / "b.json")
    again = ReplayBuffer.load(tmp_path / "b.json")
    assert again.to_json() == buf.to_json()
    assert [e.key for e in again.sample(3, random.Random(1))] == [e.key for e in buf.sample(3, random.Random(1))]


class _ScriptedAgent:
    def __init__(self, returns):
        self.returns = list(returns)
        self.tasks = []

    def play(self, tasks, progress=False):
        self.tasks.extend(tasks)
        return [_ep(self.returns.pop(0)) for _ in tasks]


def test_rollout_func_contract():
    agent = _ScriptedAgent([1.0, 0.0])
    ro = SelfPlayRollout(agent, filler_id=2)
    ro.sources["src:k"] = "class XEnv: pass"
    ro.designer["c0"] = StoredCompletion([7, 8], [9, 10, 11], [-0.1, -0.2, -0.3], reward=-1.0)
    prompts = [agent_prompt("src:k", 5, max_turns=3, source_key="src:k")] * 2 + [designer_prompt("c0")]
    out = ro(prompts, None)
    assert out["prompt_ids"][0] == [1, 2] and out["completion_ids"][0] == [3, 4, 5]
    assert out["env_mask"][0] == [1, 0, 1] and out["logprobs"][0] == [-0.5, 0.0, -0.5]
    assert out["reward"] == [1.0, 0.0, -1.0]
    assert out["completion_ids"][2] == [9, 10, 11] and out["env_mask"][2] == [1, 1, 1]
    assert agent.tasks[0].source == "class XEnv: pass" and agent.tasks[0].seed == 5
    failed = Episode(task=PlayTask("x", 0), messages=[], actions=[], rewards=[], episode_return=0.0, won=False,
                     turns=0, terminated=False, truncated=True, token_ids=[], logprobs=[], mask=[], error="boom")
    assert split_episode(failed, 2) == ([2], [2], [0.0], [0])


def test_every_setting_declares_its_help_and_the_cli_lists_it(capsys):
    """One source: each SelfPlayConfig field carries its help where it is declared;
    ``spade selfplay --help`` lists every setting from it and every preset of PRESETS,
    and ``--set`` strings become the declared type."""
    import dataclasses

    from spade_envs.cli.main import main
    from spade_envs.selfplay.config import SelfPlayConfig, settings_help
    from spade_envs.selfplay.presets import PRESETS

    fields = dataclasses.fields(SelfPlayConfig)
    assert all(f.metadata.get("help") for f in fields), [f.name for f in fields if not f.metadata.get("help")]
    assert [row[0] for row in settings_help()] == [f.name for f in fields]
    import os

    os.environ["COLUMNS"] = "250"
    try:
        assert main(["selfplay", "--help"]) == 0
    finally:
        del os.environ["COLUMNS"]
    out = " ".join(capsys.readouterr().out.split())
    for name, kind, default, text in settings_help():
        assert f"{name} ({kind}, default {default}): {' '.join(text.split())}" in out, name
    assert ", ".join(PRESETS) in out and len(PRESETS) == 8
    c = build_config("cpu-tiny", unterminated_reward="none", prefix_sliding="[2, 3]", hint_once="yes", seed="5")
    assert (c.unterminated_reward, c.prefix_sliding, c.hint_once, c.seed) == (None, [2, 3], True, 5)
    with pytest.raises(SelfPlayConfigError, match="seed expects int"):
        build_config("cpu-tiny", seed="five")


def test_cli_rejects_bad_settings_with_one_line(capsys):
    from spade_envs.cli.main import main

    assert main(["selfplay", "--preset", "tpu-huge"]) == 2
    assert main(["selfplay", "--set", "rounds=0"]) == 2
    err = capsys.readouterr().err
    assert "unknown preset" in err and "rounds must be >= 1" in err and "Traceback" not in err


def test_seed_skills_and_games_choose_the_replay_seeds_and_params_parents():
    from spade_envs.registry.catalog import seed_records
    from spade_envs.selfplay.design_params import train_parents
    from spade_envs.selfplay.splits import is_heldout
    from spade_envs.selfplay.replay_buffer import train_seed_entries

    skill = {str(r.env_id): r.skill for r in seed_records()}
    every = train_seed_entries(build_config("cpu-tiny"))
    assert {e.env_id for e in every} == {i for i in skill if not is_heldout(i)}
    smol = build_config("cpu-smol")
    chosen = train_seed_entries(smol)
    assert chosen and {e.skill for e in chosen} <= set(smol.seed_skills)
    assert "tool use" not in {e.skill for e in chosen} and "tool use" in {e.skill for e in every}
    assert all(e.kwargs == {"difficulty": 0} for e in chosen)  # seed_levels: easiest
    assert {skill[p] for p in train_parents(None, ["tool use"])} == {"tool use"}
    assert not any(is_heldout(p) for p in train_parents(None))
    with pytest.raises(SelfPlayConfigError):
        build_config("cpu-tiny", seed_skills=[])


def test_designer_prompts_are_cut_to_their_token_budget():
    from spade_envs.designer.corpus import Document
    from spade_envs.designer.memory import DesignerMemory
    from spade_envs.designer.prompts import build_prompt
    from spade_envs.selfplay.design import fit_prompt

    def count(messages):
        return sum(len(m["content"]) for m in messages) // 4

    retrieval = DesignerMemory(None).retrieve("mathematical reasoning", mode="puzzle", seed=0)
    doc = Document("doc", "word " * 3000)
    full = build_prompt("puzzle", "mathematical reasoning", doc, retrieval)
    build = lambda r, d: build_prompt("puzzle", "mathematical reasoning", d, r)  # noqa: E731
    same, kept = fit_prompt(build, retrieval, doc, count, count(full))
    assert same == full and kept is retrieval  # within budget: untouched
    contract_only = count(build_prompt("puzzle", "mathematical reasoning", Document("doc", "x"), None))
    budget = contract_only + 200
    assert count(full) > budget
    cut, shown = fit_prompt(build, retrieval, doc, count, budget)
    assert count(cut) <= budget
    assert not shown.positives and shown.format_example is None
    assert "word" in cut[-1]["content"]  # the document is cut, not dropped


def test_time_budget_starts_no_round_that_would_overrun(tmp_path, monkeypatch):
    """``run(time_budget_s=...)`` starts a round only when one of the mean length so far
    still ends within the budget (the learning bench relies on this to hold 30 minutes)."""
    from types import SimpleNamespace

    from spade_envs.selfplay import checkpoint, loop, trainer as trainer_mod

    clock = [0.0]
    monkeypatch.setattr(loop, "time", SimpleNamespace(perf_counter=lambda: clock[0]))

    class FakeTrainer:
        def __init__(self, config, **kwargs):
            self.round, self.acc, self.generations = 0, None, 1
            self.agent = SimpleNamespace(close=lambda: None)
            self.grpo = SimpleNamespace(accelerator=SimpleNamespace(unwrap_model=lambda m: m), optimizer=None,
                                        model_wrapped=None)
            self.model = self.tokenizer = self.rng = None
            self.registry = SimpleNamespace(path=tmp_path / "reg")

        def run_round(self):
            clock[0] += 10.0  # every round takes 10 s
            self.round += 1
            return {"round": self.round}

        def state_dict(self):
            return {}

    monkeypatch.setattr(trainer_mod, "SelfPlayTrainer", FakeTrainer)
    monkeypatch.setattr(checkpoint, "save", lambda *a, **k: None)
    config = build_config("cpu-tiny", rounds=20, out_dir=str(tmp_path / "out"), plot=False, tensorboard=False)
    out = loop.run(config, time_budget_s=35.0)
    assert out["rounds_this_run"] == 3 and out["stopped_by_budget"]  # a 4th would end at 40 s
    clock[0] = 0.0
    config = build_config("cpu-tiny", rounds=2, out_dir=str(tmp_path / "out2"), plot=False, tensorboard=False)
    out = loop.run(config, time_budget_s=1000.0)
    assert out["rounds_this_run"] == 2 and not out["stopped_by_budget"]
