"""``spade design`` progress per generated answer and the tiny model's smoke budget."""

from __future__ import annotations

import json

from designer_fakes import ScriptedBackend
from registry_helpers import spade_home  # noqa: F401 - fixture
from spade_envs.cli.main import main


def _capture(monkeypatch, backend):
    import spade_envs.agents as agents
    import spade_envs.cli.design as design

    seen: list[tuple[str, int, int]] = []
    kwargs: dict = {}
    monkeypatch.setattr(agents, "load_backend", lambda spec, **kw: backend)
    real = design._progress

    def recording(enabled):
        progress, update = real(enabled)

        def both(stage, done, total):
            seen.append((stage, done, total))
            update(stage, done, total)
        return progress, both

    monkeypatch.setattr(design, "_progress", recording)
    from spade_envs.designer import designer

    real_init = designer.EnvironmentDesigner.__init__

    def init(self, config, **kw):
        kwargs["max_new_tokens"] = config.max_new_tokens
        real_init(self, config, **kw)

    monkeypatch.setattr(designer.EnvironmentDesigner, "__init__", init)
    return seen, kwargs


def test_propose_and_repair_move_per_answer_with_a_local_model(spade_home, monkeypatch, capsys):  # noqa: F811
    backend = ScriptedBackend(["no program here"])
    seen, kwargs = _capture(monkeypatch, backend)
    code = main(["design", "--n", "3", "--mode", "puzzle", "--model", "transformers:tiny-random",
                 "--max-repairs", "1", "--no-score", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["proposed"] == 3
    assert [s for s in seen if s[0] == "propose"] == [("propose", 1, 3), ("propose", 2, 3), ("propose", 3, 3)]
    assert [s for s in seen if s[0] == "repair"] == [("repair", 1, 3), ("repair", 2, 3), ("repair", 3, 3)]
    assert all(len(call) == 1 for call in backend.calls)  # one answer per chat call
    assert kwargs["max_new_tokens"] == 48  # the tiny model's smoke budget, not 1536


def test_servers_still_get_one_batch(spade_home, monkeypatch, capsys):  # noqa: F811
    backend = ScriptedBackend(["no program here"])
    seen, kwargs = _capture(monkeypatch, backend)
    code = main(["design", "--n", "3", "--mode", "puzzle", "--model", "openai:http://127.0.0.1:1#m",
                 "--max-repairs", "0", "--no-score", "--json"])
    capsys.readouterr()
    assert code == 0
    assert [len(call) for call in backend.calls] == [3] and kwargs["max_new_tokens"] == 1536
    assert [s for s in seen if s[0] == "propose"] == [("propose", 3, 3)]
