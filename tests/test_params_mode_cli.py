"""``spade design --mode params``: scripted designer through the CLI, usage errors, and
an end-to-end run with the tiny random model under constrained decoding."""

from __future__ import annotations

import json

import pytest

from spade_envs.cli.main import main
from spade_envs.registry.store import Registry

from designer_fakes import ScriptedAgent
from registry_helpers import spade_home, synthetic_source  # noqa: F401 - fixture
from test_params_mode import JsonScript, _ans
from variant_programs import SUM_SOURCE


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _parent() -> str:
    with Registry.open() as reg:
        return str(reg.add(SUM_SOURCE, generation=1).env_id)


def test_params_mode_registers_scored_variants(spade_home, monkeypatch, capsys):  # noqa: F811
    import spade_envs.agents as agents

    pid = _parent()
    backend = JsonScript([_ans(pid, n_terms=5, max_value=200, max_turns=2), _ans(pid, n_terms=2, max_value=20, max_turns=1)])
    agent = ScriptedAgent([1.0], [0.0, 1.0])
    monkeypatch.setattr(agents, "load_backend", lambda spec, **kw: backend)
    monkeypatch.setattr(agents, "load_agent", lambda spec, **kw: agent)
    code, out, err = _run(capsys, ["design", "--mode", "params", "--n", "2", "--parent", pid, "--model", "openai:x#m",
                                   "--agent", "replay:reference", "--json", "--no-progress"])
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "params" and data["proposed"] == 2 and data["accepted"] == 2 and data["registered"] == 2
    assert data["generation"] == 2 and data["scored"] == 2 and data["mean_regret"] == pytest.approx(0.5)
    with Registry.open() as reg:
        for cand in data["candidates"]:
            rec = reg.get(cand["env_id"])
            assert rec.parent == pid and rec.params == cand["point"] and rec.generation == 2
            assert rec.metadata["regret"] == pytest.approx(0.5) and rec.metadata["scores"]["n_plain"] == 4
    assert {t.kwargs["n_terms"] for t in agent.tasks} == {5, 2}  # plays ran at the variants' points
    code, out, err = _run(capsys, ["design", "--mode", "params", "--n", "1", "--parent", pid, "--model", "openai:x#m",
                                   "--agent", "replay:reference"])
    assert code == 0, err
    assert "variants" in out and "novelty" in out  # the same point again: rejected, in the table


@pytest.mark.parametrize("argv, message, code", [
    (["design", "--parent", "spade/Env-00001"], "--parent goes with --mode params", 2),
    (["design", "--mode", "params", "--parent", "Env-x"], "--parent", 2),
    (["design", "--mode", "params", "--parent", "spade/Env-00999"], "PARAMETERS", 1),
])
def test_params_mode_usage_errors(spade_home, capsys, argv, message, code):  # noqa: F811
    got, out, err = _run(capsys, [*argv, "--model", "openai:http://127.0.0.1:1#m"])
    assert got == code and message in err and "Traceback" not in err and out == ""


def test_params_mode_end_to_end_tiny_random(spade_home, capsys):  # noqa: F811
    pid = _parent()
    code, out, err = _run(capsys, ["design", "--mode", "params", "--n", "2", "--parent", pid,
                                   "--model", "transformers:tiny-random", "--n-hint", "1", "--n-plain", "1",
                                   "--max-turns", "1", "--temperature", "1.0", "--json", "--no-progress"])
    assert code == 0, err
    data = json.loads(out)
    assert data["constrained"] and data["proposed"] == 2
    assert data["rejected"].get("parse", 0) == 0 and data["rejected"].get("params", 0) == 0
    assert data["registered"] >= 1 and data["scored"] == data["registered"]
    with Registry.open() as reg:
        for cand in data["candidates"]:
            if cand["accepted"]:
                rec = reg.get(cand["env_id"])
                assert rec.parent == pid and rec.metadata["regret"] is not None
