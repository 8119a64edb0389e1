"""``spade design`` with a replay designer that writes SPADE-format programs (a text game,
a multi-turn game without solution(), a tool-use env with a free-text walkthrough): each
is accepted, registered and scored with the reference-replay agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from designer_fakes import ScriptedBackend, fenced
from registry_helpers import spade_home  # noqa: F401 - fixture

from spade_envs.cli.main import main

PROGRAMS = Path(__file__).parent / "spade_programs"
CASES = [
    ("puzzle", "mathematical reasoning", "game_00001_000_mathematical_reasoning.py", True),
    ("game", "spatial reasoning", "game_00001_001_spatial_reasoning.py", True),
    ("game", "logical deduction", "game_00001_002_logical_deduction.py", False),
    ("tool", "logical deduction", "game_00001_003_api_orchestration.py", True),
]


@pytest.mark.parametrize("mode, skill, name, verified", CASES, ids=[c[2][11:-3] for c in CASES])
def test_spade_format_designer_output_is_accepted(spade_home, monkeypatch, capsys, mode, skill, name, verified):  # noqa: F811
    pytest.importorskip("spade_envs.sandbox")
    import spade_envs.agents as agents

    # what a SPADE-prompted designer answers: prose, then the saved-game program
    backend = ScriptedBackend([fenced((PROGRAMS / name).read_text(), "Here is the game.")])
    monkeypatch.setattr(agents, "load_backend", lambda spec, **kw: backend)
    code = main(["design", "--n", "1", "--mode", mode, "--skill", skill, "--model", "openai:http://127.0.0.1:1#m",
                 "--agent", "replay:reference", "--n-hint", "1", "--n-plain", "1", "--max-turns", "20",
                 "--max-repairs", "0", "--json", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    cand = data["candidates"][0]
    assert data["accepted"] == 1 and data["registered"] == 1, cand
    code = main(["registry", "show", cand["env_id"], "--json"])
    shown = json.loads(capsys.readouterr()[0])
    assert shown["metadata"].get("verified", True) is verified
    if verified:  # the reference replay wins through the registry entry
        assert data["mean_win_rate_plain"] == pytest.approx(1.0), data
