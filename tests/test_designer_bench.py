"""``spade bench designer``'s wiring on the tiny random model: the arms differ only by the
permutation of the rewards, the agent is frozen, seeds are shared, and the control arm's
step never receives the true rewards (a synthetic landscape gives the groups variance;
the plays still go through the frozen agent)."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace

import pytest

from spade_envs.selfplay import designer_stats as st
from spade_envs.selfplay.designer_arm import DesignerArm, PointScorer, frozen_agent, permute_group_rewards, weights_hash
from spade_envs.selfplay.designer_bench import QUICK, arm_config


class SyntheticScorer(PointScorer):
    """Plays through the frozen agent, but each point's returns follow a fixed rule of the
    point (plain 0, hinted 0.001-0.1 by its hash): regret, and so reward, differs between
    proposals (below blend's 0.15 saturation)."""

    def returns(self, key, hint, episode):
        super().returns(key, hint, episode)
        return (1 + int(hashlib.sha256(key.encode()).hexdigest(), 16) % 100) / 1000 if hint else 0.0


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    out = tmp_path_factory.mktemp("designer-bench")
    s = replace(QUICK, group=4, prompts=1)
    cfgs = {n: arm_config(s, out, n) for n in ("trained", "control")}
    trained = SelfPlayTrainer(cfgs["trained"])
    agent, start = frozen_agent(trained)
    control = SelfPlayTrainer(cfgs["control"])
    before = {"frozen": weights_hash(start), "trained": weights_hash(trained.model),
              "control": weights_hash(control.model)}
    scorer = SyntheticScorer(agent, trained.rollout.reward_of, plain=1, hint=1, max_turns=1, seed=0)
    arms = {"trained": DesignerArm("trained", trained, scorer, start),
            "control": DesignerArm("control", control, scorer, start, permute=True)}
    recs, plays = {}, {}
    for name, arm in arms.items():
        recs[name] = arm.step(0)
        plays[name] = scorer.plays
    return dict(cfgs=cfgs, arms=arms, recs=recs, before=before, start=start, scorer=scorer, plays=plays)


def test_arm_configs_identical_but_folders(bench):
    a, b = (bench["cfgs"][n].to_dict() for n in ("trained", "control"))
    diff = {k for k in a if a[k] != b[k]}
    assert diff == {"out_dir", "registry_path"}
    assert a["params_share"] == 1.0 and a["designer_group_size"] == 4


def test_same_start_same_prompts_shared_seeds(bench):
    before, recs = bench["before"], bench["recs"]
    assert before["trained"] == before["control"] == before["frozen"]
    # step 0 runs on identical weights, prompts and sampling seeds: identical proposals
    key = [(p["parent"], p["point"], p["valid"]) for p in recs["trained"].proposals]
    assert key == [(p["parent"], p["point"], p["valid"]) for p in recs["control"].proposals]
    assert any(p["valid"] for p in recs["trained"].proposals)
    # the control arm's points were played once, by the trained arm, on the same seeds
    assert bench["plays"]["control"] == bench["plays"]["trained"] > 0
    sc = bench["scorer"]
    assert sc.episode_seeds("spade/Env-00001-v0@{}") == sc.episode_seeds("spade/Env-00001-v0@{}")


def test_control_never_gets_the_true_rewards(bench):
    t, c = bench["recs"]["trained"], bench["recs"]["control"]
    assert t.trained_rewards == t.true_rewards  # the trained arm's step consumed the true rewards
    varied = [i for i, g in enumerate(c.true_rewards) if len(set(g)) > 1]
    assert varied, "the synthetic landscape must give some group reward variance"
    for got, true in zip(c.trained_rewards, c.true_rewards):
        assert Counter(got) == Counter(true)  # same rewards, reshuffled within the group
    # the step consumed exactly the permutation drawn from the arm's own seeded RNG ...
    import random

    rng, expected = random.Random(17), [list(g) for g in c.true_rewards]  # DesignerArm(seed=0)'s RNG
    for g in expected:
        rng.shuffle(g)
    assert c.trained_rewards == expected
    # ... which is not the truth: this fails if the control arm's step received the true rewards
    assert expected != c.true_rewards


def test_frozen_agent_frozen_and_designer_moved(bench):
    assert weights_hash(bench["start"]) == bench["before"]["frozen"]
    # the frozen model computes with its OWN weights: changing the trainer's leaves its output alone
    import torch

    trained_model = bench["arms"]["trained"].trainer.model
    ids = torch.tensor([[1, 5, 9, 14]])
    with torch.no_grad():
        before = bench["start"](input_ids=ids).logits.clone()
        saved = [p.detach().clone() for p in trained_model.parameters()]
        for p in trained_model.parameters():
            p.add_(1.0)
        after = bench["start"](input_ids=ids).logits
        for p, s in zip(trained_model.parameters(), saved):
            p.copy_(s)
    assert torch.equal(before, after)
    assert all(not p.requires_grad for p in bench["start"].parameters())
    trained = bench["arms"]["trained"].trainer
    assert weights_hash(trained.model) != bench["before"]["trained"]  # the hash does see a step
    m = bench["recs"]["trained"].metrics
    assert m["nonzero_adv_group_share"] > 0 and m["grad_norm"] and m["grad_norm"] > 0
    # the trainer's own round figure (the self-play summary's) counts the same groups
    assert m["trainer_groups_nonzero_adv"] == round(m["nonzero_adv_group_share"] * m["groups"])


def test_permutation_keeps_each_group_multiset():
    import random

    class C:
        def __init__(self, r):
            self.reward = r

    groups = [[C(x) for x in (1.0, 0.0, -1.0, 0.5)], [C(2.0), C(2.0)]]
    permute_group_rewards(groups, random.Random(3))
    assert sorted(c.reward for c in groups[0]) == [-1.0, 0.0, 0.5, 1.0]
    assert [c.reward for c in groups[1]] == [2.0, 2.0]


def test_compare_interval_and_p_value():
    same = st.compare([0.0, 0.1] * 20, [0.0, 0.1] * 20)
    assert same["diff"] == 0 and same["p_value"] > 0.5
    far = st.compare([0.5, 0.6] * 30, [0.0, 0.1] * 30)
    assert far["diff"] == 0.5 and far["p_value"] < 0.01 and far["ci95"][0] > 0.4
    assert st.quarters(30) == (range(0, 7), range(23, 30))
    k = st.knob_distributions([{"valid": True, "point": {"difficulty": 2}, "parent": "a"},
                               {"valid": True, "point": {"difficulty": 10}, "parent": "a"},
                               {"valid": False, "point": None, "parent": None}])
    assert list(k["knobs"]["difficulty"]) == ["2", "10"] and k["valid"] == 2


def test_bench_is_listed_and_bad_settings_are_refused_first(monkeypatch):
    from spade_envs.cli.bench import BENCHMARKS
    from spade_envs.selfplay.config import SelfPlayConfigError
    from spade_envs.selfplay.designer_bench import DEFAULTS, settings_from_env

    assert BENCHMARKS["designer"] == "spade_envs.selfplay.designer_bench"
    assert DEFAULTS.steps >= 30 and DEFAULTS.prompts >= 2 and DEFAULTS.group >= 8 and DEFAULTS.plays >= 4
    assert DEFAULTS.heldout >= 64 and DEFAULTS.model == "default"
    monkeypatch.setenv("SPADE_BENCH_STEPS", "0")
    with pytest.raises(SelfPlayConfigError, match="SPADE_BENCH_STEPS"):
        settings_from_env()
    monkeypatch.setenv("SPADE_BENCH_STEPS", "3")
    monkeypatch.setenv("SPADE_BENCH_LR", "fast")
    with pytest.raises(SelfPlayConfigError, match="SPADE_BENCH_LR"):
        settings_from_env()
    monkeypatch.setenv("SPADE_BENCH_LR", "1e-4")
    assert (settings_from_env().steps, settings_from_env().learning_rate) == (3, 1e-4)


def test_invalid_penalty_knob_reaches_every_arm_and_is_bounded(monkeypatch, tmp_path):
    from spade_envs.selfplay.config import SelfPlayConfigError
    from spade_envs.selfplay.designer_bench import DEFAULTS, arm_config, settings_from_env

    assert arm_config(DEFAULTS, tmp_path, "trained").invalid_penalty == -0.25  # the bench's, not the preset's -1
    for bad in ("-2", "0.5", "harsh", "nan"):
        monkeypatch.setenv("SPADE_BENCH_INVALID_PENALTY", bad)
        with pytest.raises(SelfPlayConfigError, match="SPADE_BENCH_INVALID_PENALTY"):
            settings_from_env()
    monkeypatch.setenv("SPADE_BENCH_INVALID_PENALTY", "0")
    s = settings_from_env()
    assert {arm_config(s, tmp_path, a).invalid_penalty for a in ("trained", "control")} == {0.0}


def test_step_scores_the_masked_distribution_it_sampled(bench):
    # the backend reports the logprobs of the masked (renormalised) distribution it sampled
    # from; the step's behaviour logprobs are teacher-forced under the same mask: they agree.
    # Scored without the mask, the tiny model's near-uniform distribution over ~49k tokens
    # would put them ~10 nats/token apart.
    gap = bench["recs"]["trained"].metrics["logprob_gap_sampled_minus_trained"]
    assert gap is not None and abs(gap) < 1e-3


def test_quick_run_reports_every_key_and_saves_loadable_designers(tmp_path):
    # the whole bench on the tiny model (--quick): every --json key, and each arm's designer
    # saved as a transformers checkpoint holding exactly the weights the arm ended on
    import torch
    from transformers import AutoModelForCausalLM

    from spade_envs.selfplay.designer_bench import run_designer_bench

    result = run_designer_bench(QUICK, tmp_path, say=lambda text: None)
    assert {"arms", "steps", "comparison", "heldout_parents", "settings"} <= set(result)
    assert (tmp_path / "designer.json").is_file() and len(result["steps"]) == QUICK.steps
    for name in ("trained", "control"):
        arm = result["arms"][name]
        folder = arm["checkpoint"]
        assert folder == str(tmp_path / name / "designer")
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        assert weights_hash(model) == arm["final_weights_sha256"]
    assert result["arms"]["untrained"]["checkpoint"] is None


def test_checkpoint_holds_the_stepped_weights(bench, tmp_path):
    # after a real step the saved designer is the stepped one, not the start
    import torch
    from transformers import AutoModelForCausalLM

    from spade_envs.selfplay.designer_arm import save_checkpoint

    trainer = bench["arms"]["trained"].trainer
    folder = save_checkpoint(trainer, tmp_path / "designer")
    saved = weights_hash(AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32))
    assert saved == weights_hash(trainer.model) != bench["before"]["trained"]
