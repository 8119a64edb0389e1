"""End to end: two cpu rounds with the tiny random model and the scripted designer,
weights move, a generation is registered, TRL's advantages equal the hand computation,
and resume continues exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytestmark = pytest.mark.timeout(1500)  # four tiny rounds; minutes when 2 cores are shared

from spade_envs.selfplay import build_config  # noqa: E402
from spade_envs.selfplay.rewards import group_advantages  # noqa: E402

TIMING = ("_s", "tokens_per_s")


def _cfg(out: Path, rounds: int):
    return build_config("cpu-harness", out_dir=str(out), registry_path=str(out.parent / f"{out.name}.sqlite3"),
                        rounds=rounds, envs_per_round=1, agent_group_size=2, hint_plays=1, max_turns=1,
                        agent_max_new_tokens=4, tensorboard=False, keep_checkpoints=3)


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    out = {}
    for f in sorted(folder.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def _strip(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.endswith(TIMING)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from spade_envs.selfplay.loop import run

    base = tmp_path_factory.mktemp("selfplay")
    held = {}
    full = run(_cfg(base / "a", 2), on_start=lambda tr: held.setdefault("trainer", tr))
    first = run(_cfg(base / "b", 1))
    resumed = run(_cfg(base / "b", 2), resume=True)
    return {"base": base, "full": full, "first": first, "resumed": resumed, "trainer": held["trainer"]}


def test_two_rounds_end_to_end(runs):
    full = runs["full"]
    out = Path(full["out_dir"])
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rows] == [0, 1]
    for r in rows:
        assert r["proposed"] == 2 and r["valid"] == 1 and r["valid_rate"] == 0.5
        assert r["rejected_at"] == {"extract": 1} and r["acceptance_by_stage"]["novelty"] == 0.5
        assert r["win_rate_plain"] is not None and r["win_rate_hint"] is not None and r["mean_regret"] >= 0
    assert (out / "metrics.png").stat().st_size > 1000
    assert full["checkpoint"].endswith("round-00001")


def test_delayed_designer_rows_keep_real_behaviour_logprobs(runs):
    # the scripted designer reports no logprobs: the trainer scores its completions under the
    # sampling-time weights (never 0.0, which would make every delayed ratio meaningless)
    tr = runs["trainer"]
    state = json.loads((Path(runs["full"]["checkpoint"]) / "state.json").read_text())
    assert state["ledger"]["candidates"] == [] and state["designer_completions"] == {}
    props = tr.designer.propose(99, __import__("random").Random(0), n_prompts=1)
    lps = tr._behaviour_logprobs(props[:1])[0]
    assert len(lps) == min(len(props[0].completion_ids), tr.config.designer_max_new_tokens)
    assert all(x < 0 for x in lps)


def test_params_mode_registers_variants_played_from_the_run_registry(tmp_path):
    from spade_envs.registry.store import Registry
    from spade_envs.selfplay.loop import run

    cfg = build_config("cpu-tiny", out_dir=str(tmp_path / "p"), registry_path=str(tmp_path / "p.sqlite3"), rounds=1,
                       params_share=1.0, designer_prompts=1, envs_per_round=2, agent_group_size=2, hint_plays=1,
                       max_turns=1, agent_max_new_tokens=4, tensorboard=False, plot=False, seed_levels="easiest")
    summary = run(cfg)
    row = summary["last"]
    assert row["proposed_params"] == 2 and row["proposed"] == 2
    with Registry.open(str(tmp_path / "p.sqlite3"), create=False) as reg:
        variants = [r for r in reg.list() if r.parent is not None]
    assert len(variants) == row["registered_variants"] == summary["registered"]
    assert variants, "the constrained tiny designer proposes valid points with this seed"
    # accepted variants were played (by id, from this run's store) and scored
    assert row["rollout_tokens"] > 0 and row["scores_stored"] >= 1
    assert all(r.metadata.get("mode") == "params" for r in variants)


def test_registry_grows_by_a_generation(runs):
    from spade_envs.registry.store import Registry

    full = runs["full"]
    assert full["generations"] == [1, 2] and full["registered"] == 2
    with Registry.open(full["registry"], create=False) as reg:
        gen1 = reg.list(generation=1)
        assert len(gen1) == 1 and gen1[0].metadata.get("designer_model") == "scripted:seed-variants"
        assert gen1[0].metadata.get("candidate") == "r0-p0-c0"
        assert reg.next_generation() == 3


def test_designer_advantages_match_hand_computation(runs):
    rows = [json.loads(line) for line in (Path(runs["full"]["out_dir"]) / "metrics.jsonl").read_text().splitlines()]
    for r in rows:  # one group: a valid candidate (reward = its regret) and an invalid one (-1)
        assert r["designer_groups_trained"] == 1
        rewards = [r["designer_reward"] * 2 + 1.0, -1.0]  # mean of the two rewards -> the valid one's
        assert sorted(r["designer_advantages"]) == pytest.approx(sorted(group_advantages(rewards, 2)), abs=1e-5)


def test_agent_advantages_through_trl_match_hand_computation(runs):
    from spade_envs.agents.api import Episode, PlayTask
    from spade_envs.selfplay.rollout import agent_prompt

    returns = [1.0, 0.0, 0.5, 0.5]

    class Scripted:
        def play(self, tasks, progress=False):
            out = []
            for t, ret in zip(tasks, returns):
                out.append(Episode(task=t, messages=[], actions=["a"], rewards=[ret], episode_return=ret, won=ret >= 1,
                                   turns=1, terminated=True, truncated=False, token_ids=[5, 6, 7, 8, 2],
                                   logprobs=[0, 0, -1.0, 0, -1.0], mask=[0, 0, 1, 0, 1]))
            return out

    tr = runs["trainer"]
    tr.rollout.agent = Scripted()
    rows = [{"prompt": agent_prompt("spade/Env-00002", 0)} for _ in range(4)]  # distinct dicts
    step = tr._grpo_step(rows, 2)
    # TRL shuffles rows inside the generation batch: compare as multisets
    assert sorted(step["advantages"]) == pytest.approx(sorted(group_advantages(returns, 2)), abs=1e-5)
    assert sorted(step["advantages"])[-1] == pytest.approx(0.5 / (2 ** -0.5 + 1e-4), abs=1e-5)


def test_resume_continues_exactly(runs):
    full, resumed = runs["full"], runs["resumed"]
    assert runs["first"]["rounds"] == 1 and resumed["rounds_this_run"] == 1 and resumed["resume_note"] is None
    rows_a = [json.loads(x) for x in (Path(full["out_dir"]) / "metrics.jsonl").read_text().splitlines()]
    rows_b = [json.loads(x) for x in (Path(resumed["out_dir"]) / "metrics.jsonl").read_text().splitlines()]
    assert [_strip(r) for r in rows_a] == [_strip(r) for r in rows_b]
    wa = _weights(Path(full["checkpoint"]) / "model")
    wb = _weights(Path(resumed["checkpoint"]) / "model")
    assert wa.keys() == wb.keys() and all((wa[k] == wb[k]).all() for k in wa)
    sa = json.loads((Path(full["checkpoint"]) / "state.json").read_text())
    sb = json.loads((Path(resumed["checkpoint"]) / "state.json").read_text())
    for key in ("buffer", "ledger", "global_step", "next_round", "estimates", "generations"):
        assert sa[key] == sb[key], key
