"""``spade design`` (spade_envs/cli/design.py): fake backend through the CLI, usage
errors, and an end-to-end run with the tiny random model."""

from __future__ import annotations

import json

import pytest

from spade_envs.cli.main import main
from designer_fakes import VALID_ENV, ScriptedAgent, ScriptedBackend, fenced
from registry_helpers import spade_home  # noqa: F401 - fixture


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fake_models(monkeypatch):
    import spade_envs.agents as agents

    backend = ScriptedBackend([fenced(VALID_ENV)])
    agent = ScriptedAgent([1.0], [0.0, 1.0])
    monkeypatch.setattr(agents, "load_backend", lambda spec, **kw: backend)
    monkeypatch.setattr(agents, "load_agent", lambda spec, **kw: agent)
    return backend, agent


def test_design_json_with_fake_model(spade_home, fake_models, capsys):  # noqa: F811
    code, out, err = _run(capsys, ["design", "--n", "2", "--mode", "puzzle", "--skill", "optimization",
                                   "--model", "openai:http://127.0.0.1:1#m", "--agent", "replay:reference",
                                   "--max-repairs", "0", "--json", "--no-progress"])
    assert code == 0, err
    data = json.loads(out)  # exactly one JSON object
    assert data["proposed"] == 2 and data["accepted"] == 1 and data["rejected"] == {"novelty": 1}
    assert data["generation"] == 1 and data["registered"] == 1 and data["scored"] == 1
    assert data["mean_regret"] == pytest.approx(0.5) and data["mean_win_rate_plain"] == pytest.approx(0.5)
    good = next(c for c in data["candidates"] if c["accepted"])
    assert good["env_id"].startswith("spade/Env-01") and good["skill"] == "optimization"
    # it is in the local registry, with its provenance
    code, out, _ = _run(capsys, ["registry", "list", "--json"])
    assert code == 0 and any(e["generation"] == 1 and e["skill"] == "optimization" for e in json.loads(out)["envs"])


def test_design_table_and_progress(spade_home, fake_models, capsys):  # noqa: F811
    code, out, err = _run(capsys, ["design", "--n", "1", "--mode", "puzzle", "--model", "openai:http://127.0.0.1:1#m",
                                   "--agent", "replay:reference"])
    assert code == 0, err
    for needle in ("proposed", "accepted", "mean regret", "mean win rate (plain)", "candidates"):
        assert needle in out
    for stage in ("propose", "accept", "register", "score"):
        assert stage in err  # one progress bar per stage, on stderr


@pytest.mark.parametrize("argv, message", [
    (["design", "--skill", "cooking"], "--skill must be one of"),
    (["design", "--mode", "essay"], "mode must be one of"),
    (["design", "--reward-mode", "bogus"], "bogus"),
    (["design", "--n", "0"], "--n"),
])
def test_design_usage_errors(spade_home, capsys, argv, message):  # noqa: F811
    code, out, err = _run(capsys, argv)
    assert code == 2 and message in err and "Traceback" not in err and out == ""


def test_design_bad_model_is_one_line(spade_home, capsys):  # noqa: F811
    code, out, err = _run(capsys, ["design", "--model", "nonsense:x", "--json", "--no-progress"])
    assert code == 1 and "unknown backend" in err and "Traceback" not in err and out == ""


def test_design_end_to_end_tiny_random(spade_home, capsys):  # noqa: F811
    """The real backend: a random model writes no program; every verdict says so."""
    code, out, err = _run(capsys, ["design", "--n", "1", "--model", "transformers:tiny-random", "--mode", "game",
                                   "--max-repairs", "1", "--max-new-tokens", "32", "--json", "--no-progress"])
    assert code == 0, err
    data = json.loads(out)
    assert data["proposed"] == 1 and data["attempts"] == 2
    (cand,) = data["candidates"]
    assert len(cand["attempts"]) == 2 and cand["repairs"] == 1
    for attempt in cand["attempts"]:
        # honest: either no code was found, or the pipeline's verdicts up to the first failure
        verdicts = attempt["verdicts"]
        assert verdicts and verdicts[0]["name"] == "extract"
        assert attempt["rejected_at"] == next((v["name"] for v in verdicts if not v["ok"]), None)
    if not cand["accepted"]:
        assert data["accepted"] == 0 and data["generation"] is None and data["rejected"] == {cand["rejected_at"]: 1}
