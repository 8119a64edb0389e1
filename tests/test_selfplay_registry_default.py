"""``spade selfplay`` registers into a run-local registry unless ``--user-registry``; a
core install is told the one extra the command needs (``[train]``), not one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_envs.cli.main import main, missing_extra

pytest.importorskip("trl")


class _Stop(Exception):
    pass


@pytest.fixture
def captured(monkeypatch):
    import spade_envs.selfplay.loop as loop
    from spade_envs.errors import SpadeError

    seen = {}

    def fake_run(cfg, **kwargs):
        seen["cfg"] = cfg
        raise SpadeError("stopped by the test before training")

    monkeypatch.setattr(loop, "run", fake_run)
    return seen


def test_default_is_the_runs_own_registry(tmp_path, monkeypatch, captured, capsys):
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    code = main(["selfplay", "--preset", "cpu-tiny", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 1 and "stopped by the test" in err
    assert Path(captured["cfg"].registry_path) == tmp_path / "run" / "registry.sqlite3"
    assert "this run's own" in err and "--user-registry" in err


def test_user_registry_and_explicit_path(tmp_path, monkeypatch, captured, capsys):
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    main(["selfplay", "--preset", "cpu-tiny", "--out", str(tmp_path / "run"), "--user-registry"])
    assert captured["cfg"].registry_path in (None, "")
    assert "your registry" in capsys.readouterr().err
    main(["selfplay", "--preset", "cpu-tiny", "--out", str(tmp_path / "run"), "--set",
          f"registry_path={tmp_path / 'mine.sqlite3'}"])
    assert captured["cfg"].registry_path == str(tmp_path / "mine.sqlite3")


def test_missing_extra_is_named_once_for_selfplay():
    assert missing_extra("torch", "selfplay") == "pip install 'spade-envs[train]'"
    assert missing_extra("trl", "selfplay") == "pip install 'spade-envs[train]'"
    assert missing_extra("torch", "eval") == "pip install 'spade-envs[agents]'"
    assert missing_extra("reasoning_gym", "selfplay") == "pip install 'spade-envs[evals]'"
