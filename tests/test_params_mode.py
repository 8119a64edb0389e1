"""The ``params`` design mode: variants proposed as JSON, checked, scored and registered."""

from __future__ import annotations

import json
import random

import pytest

from spade_envs.agents.api import Backend, Generation
from spade_envs.designer.acceptance import StageVerdict
from spade_envs.designer.params_mode import VariantMemory, propose_variants, register_variants, score_variants
from spade_envs.designer.params_prompts import decoding_schema, parse_answer
from spade_envs.designer.proposal import Proposal
from spade_envs.registry.store import Registry

from designer_fakes import ScriptedAgent
from variant_programs import SUM_SOURCE


class JsonScript(Backend):
    """Answers the i-th conversation of all calls with ``answers[i % len]``; records the
    conversations and the json_schema it was given (when ``constrained``)."""

    name = "scripted-json"

    def __init__(self, answers, constrained=False):
        self.answers, self.i = list(answers), 0
        self.supports_json_schema = constrained
        self.seen, self.schemas = [], []

    def chat(self, conversations, *, tools=None, max_new_tokens=256, temperature=0.6, seed=None, json_schema=None):
        self.seen.extend(conversations)
        self.schemas.append(json_schema)
        out = []
        for _ in conversations:
            text = self.answers[self.i % len(self.answers)]
            self.i += 1
            out.append(Generation(text=text, token_ids=[1, 2, 3], logprobs=[-0.5, -0.1, -0.2], prompt_token_ids=[7, 8]))
        return out


@pytest.fixture
def reg(tmp_path):
    r = Registry.open(tmp_path / "store.sqlite3")
    yield r
    r.close()


def _ans(parent, **kw):
    return json.dumps({"parent": parent, "kwargs": kw})


def test_scripted_proposals_get_named_verdicts(reg):
    pid = str(reg.add(SUM_SOURCE).env_id)
    backend = JsonScript([
        "Sure! " + _ans(pid, n_terms=5, max_value=300) + " hope it helps",  # free text around it: still read
        _ans(pid, n_terms=9),  # out of bounds
        "I would make it harder.",  # no JSON
        _ans(pid, n_terms=3, max_value=50, max_turns=2),  # the defaults
        _ans(pid, n_terms=5, max_value=300, max_turns=2),  # the same point as the first
        _ans("spade/Env-00001-v0", n_terms=4),  # not offered
    ])
    props = propose_variants(backend, reg, 6, rng=random.Random(1), parents=[pid])
    got = [(p.rejected_at, p.valid) for p in props]
    assert got == [(None, True), ("params", False), ("parse", False), ("novelty", False), ("novelty", False),
                   ("parse", False)]
    good = props[0]
    assert good.point == {"n_terms": 5, "max_value": 300, "max_turns": 2} and good.parent == pid
    names = [v.name for v in good.verdicts]
    assert names[:3] == ["parse", "params", "novelty"] and "solution_replay" in names and names[-1] == "parameters"
    # one proposal type, typed verdicts in memory, the stored shape only in JSON
    assert all(type(p) is Proposal and all(type(v) is StageVerdict for v in p.verdicts) for p in props)
    stored = json.loads(json.dumps(good.to_json()))["verdicts"]
    assert [v["name"] for v in stored] == [str(n) for n in names] and all(v["ok"] for v in stored)
    assert "n_terms" in props[1].verdicts[-1].detail
    assert good.prompt_ids == [7, 8] and good.completion_ids == [1, 2, 3] and good.logprobs == [-0.5, -0.1, -0.2]
    assert not good.constrained and backend.schemas == [None]
    prompt = backend.seen[0][1]["content"]
    assert pid in prompt and '"n_terms"' in prompt and "No variant of it has been tried yet." in prompt


def test_acceptance_runs_at_the_point(reg):
    """A point where the program breaks is rejected by the acceptance stages, not by params."""
    broken = SUM_SOURCE.replace("self._terms = [rng.randint(10, self.max_value)",
                                "self._terms = [rng.randint(10, self.max_value) // (self.max_turns - 5)")
    pid = str(reg.add(broken).env_id)
    props = propose_variants(JsonScript([_ans(pid, max_turns=5)]), reg, 1, parents=[pid])
    assert props[0].rejected_at not in (None, "parse", "params", "novelty")
    assert any("ZeroDivision" in v.detail for v in props[0].verdicts)


def test_memory_of_past_variants_reaches_the_prompt(reg):
    pid = str(reg.add(SUM_SOURCE).env_id)
    v = reg.add_variant(pid, {"n_terms": 6, "max_value": 999})
    reg.update_scores(v.env_id, regret=0.0, win_rate_hint=0.0, win_rate_plain=0.0)
    backend = JsonScript([_ans(pid, n_terms=6, max_value=999, max_turns=2)])
    props = propose_variants(backend, reg, 1, parents=[pid])
    prompt = backend.seen[0][1]["content"]
    assert '"max_value": 999' in prompt and "too hard" in prompt
    assert props[0].rejected_at == "novelty" and str(v.env_id) in props[0].verdicts[-1].detail


def test_constrained_backend_gets_the_schema(reg):
    pid = str(reg.add(SUM_SOURCE).env_id)
    backend = JsonScript([_ans(pid, n_terms=4, max_value=20, max_turns=1)], constrained=True)
    props = propose_variants(backend, reg, 2, group_size=2, parents=[pid])
    assert len(props) == 4 and props[0].constrained and {p.group for p in props} == {"r0-v0", "r0-v1"}
    (schemas,) = backend.schemas
    assert len(schemas) == 4
    kw = schemas[0]["properties"]["kwargs"]
    assert schemas[0]["properties"]["parent"] == {"const": pid}
    assert kw["properties"]["n_terms"] == {"enum": [2, 3, 4, 5, 6]} and kw["required"] == ["n_terms", "max_value", "max_turns"]
    grid = kw["properties"]["max_value"]["enum"]
    assert grid[0] == 20 and grid[-1] == 999 and 50 in grid and len(grid) <= 18
    assert sum(p.valid for p in props) == 1  # the other three repeat its point


def test_parse_answer_with_several_offers(reg):
    from spade_envs.designer.params_mode import make_offer, parametric_parents

    a = reg.add(SUM_SOURCE)
    recs = parametric_parents(reg)
    assert str(a.env_id) in [str(r.env_id) for r in recs] and all(r.parent is None for r in recs)
    offers = [make_offer(r, VariantMemory(reg)) for r in recs[:2]]
    schema = decoding_schema(offers)
    assert "anyOf" in schema and len(schema["anyOf"]) == 2
    offer, kw = parse_answer(_ans(offers[1].env_id.rsplit("-v", 1)[0], x=1), offers)
    assert offer is offers[1] and kw == {"x": 1}


def test_score_and_register_in_a_new_generation(reg):
    pid = str(reg.add(SUM_SOURCE, generation=1).env_id)
    props = propose_variants(JsonScript([_ans(pid, n_terms=6, max_value=900, max_turns=1)]), reg, 1, parents=[pid])
    from spade_envs.agents.replay import ReplayAgent
    from spade_envs.designer.scoring import PlayBudget

    agent = ReplayAgent("reference")
    scored = score_variants(agent, props, PlayBudget(hint_plays=1, plain_plays=2, max_turns=2), registry=reg)
    assert len(scored) == 1 and scored[0].estimate.win_rate_plain == 1.0 and scored[0].estimate.regret == 0.0
    gen = reg.next_generation()
    done = register_variants(reg, props, generation=gen, designer_model="scripted-json")
    rec = reg.get(done[0].env_id)
    assert rec.parent == pid and rec.params == {"n_terms": 6, "max_value": 900, "max_turns": 1}
    assert rec.generation == gen == 2 and rec.metadata["mode"] == "params"
    assert rec.metadata["regret"] == 0.0 and rec.metadata["win_rate_plain"] == 1.0
    assert [v["name"] for v in rec.metadata["acceptance"]][:3] == ["parse", "params", "novelty"]
    # the plays ran at the variant's point: six numbers in every first observation
    agent2 = ScriptedAgent([1.0], [0.0])
    score_variants(agent2, props, PlayBudget(hint_plays=1, plain_plays=1), registry=reg)
    assert all(t.kwargs == rec.params for t in agent2.tasks)


def test_tiny_random_under_constraint_always_valid_json(reg):
    from spade_envs.agents.backend_transformers import TransformersBackend

    pid = str(reg.add(SUM_SOURCE).env_id)
    backend = TransformersBackend("tiny-random")
    props = propose_variants(backend, reg, 2, group_size=2, rng=random.Random(3), parents=[pid],
                             temperature=1.0, max_new_tokens=64)
    assert len(props) == 4 and all(p.constrained for p in props)
    for p in props:
        json.loads(p.text)  # valid JSON every time
        assert p.rejected_at not in ("parse", "params"), p.verdicts
        assert p.parent == pid
        assert len(p.completion_ids) == len(p.logprobs) > 0 and all(lp <= 0.0 for lp in p.logprobs)
        assert len(p.prompt_ids) > 50
    assert any(p.valid for p in props)
    # without the constraint the same model does not produce a variant at all
    (free,) = backend.chat([props[0].messages], max_new_tokens=32, temperature=1.0, seed=0)
    with pytest.raises(ValueError):
        parse_answer(free.text, [])
