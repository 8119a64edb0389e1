"""The designer loop with a scripted backend and agent (designer/designer.py, scoring.py)."""

from __future__ import annotations

import pytest

from spade_envs.designer.designer import DesignConfig, EnvironmentDesigner
from spade_envs.designer.novelty_measure import renamed
from spade_envs.designer.scoring import PlayBudget, score_sources
from spade_envs.errors import AgentError
from spade_envs.registry.catalog import seed_records
from spade_envs.registry.store import Registry
from designer_fakes import BROKEN_ENV, VALID_ENV, ScriptedAgent, ScriptedBackend, fenced
from registry_helpers import synthetic_source


@pytest.fixture
def reg(tmp_path):
    r = Registry.open(tmp_path / "reg.sqlite3")
    r.add(synthetic_source(1), generation=1)  # the store already holds generation 1
    yield r
    r.close()


def _designer(reg, backend, agent=None, **cfg):
    cfg.setdefault("mode", "puzzle")
    cfg.setdefault("skill", "mathematical reasoning")
    config = DesignConfig(model="fake:scripted", **cfg)
    return EnvironmentDesigner(config, backend=backend, agent=agent or ScriptedAgent(), registry=reg)


def _is_repair(conv):
    return conv[-1]["role"] == "user" and "rejected at the acceptance stage" in conv[-1]["content"]


def test_garbage_is_rejected_at_extract_and_repairs_are_bounded(reg):
    backend = ScriptedBackend(["I am not sure what an environment is."])
    run = _designer(reg, backend, max_repairs=2).run()
    (c,) = run.candidates
    assert not c.accepted and c.rejected_at == "extract" and len(c.attempts) == 3
    assert all([(v.name, v.ok) for v in a.verdicts] == [("extract", False)] for a in c.attempts)
    assert len(backend.calls) == 3  # one per round, never more
    assert "No Python program" in backend.calls[1][0][-1]["content"]
    assert run.generation is None and c.env_id is None
    s = run.summary()
    assert s["proposed"] == 1 and s["accepted"] == 0 and s["rejected"] == {"extract": 1} and s["mean_regret"] is None
    assert len(reg.list()) == 1  # nothing registered


def test_broken_then_fixed_after_the_repair_prompt_is_registered_with_provenance(reg):
    backend = ScriptedBackend([lambda conv: fenced(VALID_ENV if _is_repair(conv) else BROKEN_ENV)])
    agent = ScriptedAgent(hint_returns=[1.0, 1.0], plain_returns=[1.0, 0.0, 0.0, 0.0])
    run = _designer(reg, backend, agent, max_repairs=2, hint_plays=2, plain_plays=4).run()
    (c,) = run.candidates
    # honest verdicts: first attempt fails at syntax, the repair prompt shows it, the second passes all
    assert [a.rejected_at for a in c.attempts] == ["size_syntax", None]
    assert (c.attempts[0].verdicts[0].name, c.attempts[0].verdicts[0].ok) == ("extract", True)
    assert c.attempts[0].verdicts[0].detail == "34 lines of code"
    assert "syntax error" in backend.calls[1][0][-1]["content"]
    assert [v.name for v in c.attempts[1].verdicts][-1] == "novelty"
    assert len(backend.calls) == 3  # two designer rounds + the hint prompt (no hint() in the program)
    # registered as a NEW generation with full provenance
    assert run.generation == 2 and c.new and c.env_id
    rec = reg.get(c.env_id)
    m = rec.metadata
    assert rec.generation == 2 and rec.skill == "mathematical reasoning"
    assert m["designer_model"] == "fake:scripted" and m["grounding_ref"] == c.document.ref
    assert m["prompt_hash"] == c.prompt_hash and m["parent_ids"] == c.parents and c.parents
    assert m["mode"] == "puzzle" and m["hint_origin"] == "model" and m["repairs"] == 1
    assert [v["name"] for v in m["acceptance"]][0] == "extract" and all(v["ok"] for v in m["acceptance"])
    assert "def hint(self)" in rec.source
    # scores: hinted 2/2 wins, plain 1/4 -> regret 0.75, stored through update_scores
    assert m["regret"] == pytest.approx(0.75) and m["win_rate_hint"] == 1.0 and m["win_rate_plain"] == 0.25
    assert m["scores"]["n_hint"] == 2 and m["scores"]["rewards_plain"] == [1.0, 0.0, 0.0, 0.0]
    hinted = [t for t in agent.tasks if t.hint]
    assert len(hinted) == 2 and len(agent.tasks) == 6 and all(t.source == rec.source for t in agent.tasks)
    assert [t.seed for t in hinted] == [t.seed for t in agent.tasks if not t.hint][:2]
    s = run.summary()
    assert (s["accepted"], s["registered"], s["scored"], s["rejected"]) == (1, 1, 1, {})
    assert s["rejected_attempts"] == {"size_syntax": 1} and s["attempts"] == 2
    assert m["accepted_sha256"] != m["sha256"]  # the registered source carries the injected hint()
    assert s["mean_regret"] == pytest.approx(0.75)


def test_renamed_seed_is_rejected_as_duplicate_and_valid_one_accepted(reg):
    seed = next(r for r in seed_records() if r.skill == "mathematical reasoning")
    answers = {0: fenced(renamed(seed.source)), 1: fenced(VALID_ENV)}

    class PerCandidate(ScriptedBackend):
        def chat(self, conversations, **kw):
            if "hints for puzzle" in conversations[0][0]["content"]:
                return super().chat(conversations, **kw)
            self.calls.append(conversations)
            from spade_envs.agents import Generation

            return [Generation(text=answers[min(i, 1)] if len(self.calls) == 1 else answers[0],
                               token_ids=[], logprobs=[], prompt_token_ids=[]) for i, _ in enumerate(conversations)]

    backend = PerCandidate(["x"])
    run = _designer(reg, backend, n=2, max_repairs=1).run()
    dup, ok = run.candidates
    assert dup.rejected_at == "novelty" and len(dup.attempts) == 2
    nov = dup.attempts[0].verdicts[-1]
    assert nov.name == "novelty" and not nov.ok and seed.env_id.base in nov.detail
    assert all(v.ok for v in dup.attempts[0].verdicts[:-1])  # valid program, only not novel
    assert ok.accepted and ok.env_id
    assert run.summary()["rejected"] == {"novelty": 1}


def test_same_program_twice_in_one_run_is_caught(reg):
    backend = ScriptedBackend([fenced(VALID_ENV)])
    run = _designer(reg, backend, n=2, max_repairs=0, score=False).run()
    a, b = run.candidates
    assert a.accepted and not b.accepted and b.rejected_at == "novelty"
    assert "candidate-0" in b.attempts[0].verdicts[-1].detail
    assert a.estimate is None and reg.get(a.env_id).metadata["regret"] is None


def test_backend_failure_is_a_propose_verdict(reg):
    class Failing(ScriptedBackend):
        def chat(self, conversations, **kw):
            raise AgentError("server unreachable")

    run = _designer(reg, Failing(["x"]), max_repairs=3).run()
    (c,) = run.candidates
    assert c.rejected_at == "propose" and len(c.attempts) == 1
    assert "server unreachable" in c.attempts[0].verdicts[0].detail


def test_memory_examples_become_parents_and_a_second_run_sees_the_first(reg):
    backend = ScriptedBackend([fenced(VALID_ENV)])
    run1 = _designer(reg, backend, score=True, max_repairs=0).run()
    assert run1.candidates[0].accepted
    # the second run: its memory holds the first env, scored (plain 0.0 -> too hard negative)
    d2 = _designer(reg, ScriptedBackend([fenced(VALID_ENV)]), max_repairs=0, seed=1)
    run2 = d2.run()
    assert run2.candidates[0].rejected_at == "novelty"
    assert run1.candidates[0].env_id.split("-v")[0] in run2.candidates[0].conversation[1]["content"]


def test_scores_of_an_accepted_environment_and_config_checks(reg):
    """The designer scores what it accepts from real plays (hinted 1.0, plain 0.0 then 1.0)
    and stores the regret with the entry; a budget without hinted plays is refused."""
    agent = ScriptedAgent([1.0], [0.0, 1.0])
    run = _designer(reg, ScriptedBackend([fenced(VALID_ENV)]), agent=agent, max_repairs=0, hint_plays=1,
                    plain_plays=2).run()
    (c,) = run.candidates
    assert c.accepted and c.env_id
    assert sum(t.hint for t in agent.tasks) == 1 and sum(not t.hint for t in agent.tasks) == 2
    scores = reg.get(c.env_id).metadata["scores"]
    assert scores["regret"] == pytest.approx(0.5) and scores["win_rate_plain"] == 0.5
    assert scores["win_rate_hint"] == 1.0 and scores["rewards_plain"] == [0.0, 1.0]
    with pytest.raises(ValueError):
        score_sources(agent, [("k", VALID_ENV, VALID_ENV)], config=PlayBudget(hint_plays=0))
    with pytest.raises(ValueError):
        DesignConfig(mode="essay")
    with pytest.raises(ValueError):
        DesignConfig(reward_mode="bogus")


def test_a_program_that_declares_parameters_is_accepted_as_it_is(reg):
    """Acceptance appends a ``parameters`` verdict for such a program (judged at its
    defaults and sampled points); the loop accepts what the pipeline accepts, with no repair."""
    from variant_programs import SUM_SOURCE

    backend = ScriptedBackend([fenced(SUM_SOURCE)])
    run = _designer(reg, backend, max_repairs=1, score=False).run()
    (c,) = run.candidates
    assert [v.name for v in c.attempts[0].verdicts][-1] == "parameters", c.attempts[0].verdicts
    assert c.accepted and c.repairs == 0 and c.env_id, [(v.name, v.ok, v.detail[:80]) for v in c.attempts[0].verdicts]
