"""verifiers interop contract, whatever verifiers release is installed: a core install
gets one clear line naming the real extra (before ``datasets`` is imported), the 0.3
``verifiers.legacy`` API is used where the top level lost it, a v1-only release is one
clear error, and ``info`` reaches verifiers as a dict. CI also runs the verifiers tests in
an environment of their own with the current release (see .ci/verifiers_current.sh)."""

from __future__ import annotations

import sys
import tomllib
import types
from pathlib import Path

import pytest

from spade_envs.errors import IntegrationError
from spade_envs.integrations import verifiers as spade_vf

ROOT = Path(__file__).resolve().parent.parent


def test_the_named_extra_exists_and_brings_verifiers():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert spade_vf.EXTRA == 'pip install "spade-envs[evals]"'
    assert any(dep.startswith("verifiers") for dep in extras["evals"])


def test_core_install_gets_one_clear_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "verifiers", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(IntegrationError, match=r"verifiers package is not installed.*spade-envs\[evals\]"):
        spade_vf.load_environment(ids=["spade/Env-00001"], seeds=1)


def test_missing_datasets_is_named_too(monkeypatch):
    fake = types.ModuleType("verifiers")
    fake.MultiTurnEnv = type("MultiTurnEnv", (), {"__init__": lambda self, **kw: None})
    fake.cleanup = lambda f: f
    fake.Rubric = object
    monkeypatch.setitem(sys.modules, "verifiers", fake)
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(IntegrationError, match=r"datasets package is not installed.*spade-envs\[evals\]"):
        spade_vf.load_environment(ids=["spade/Env-00001"], seeds=1)


def test_legacy_api_of_verifiers_0_3_is_used(monkeypatch):
    top = types.ModuleType("verifiers")
    top.__path__ = []  # a package
    legacy = types.ModuleType("verifiers.legacy")
    legacy.MultiTurnEnv = type("MultiTurnEnv", (), {})
    monkeypatch.setitem(sys.modules, "verifiers", top)
    monkeypatch.setitem(sys.modules, "verifiers.legacy", legacy)
    assert spade_vf._verifiers() is legacy


def test_v1_only_release_is_one_clear_error(monkeypatch):
    top = types.ModuleType("verifiers")
    top.__path__ = []
    top.__version__ = "0.4.0"
    monkeypatch.setitem(sys.modules, "verifiers", top)
    monkeypatch.setitem(sys.modules, "verifiers.legacy", None)
    with pytest.raises(IntegrationError, match=r"verifiers 0\.4\.0 has no MultiTurnEnv.*verifiers\.v1"):
        spade_vf._verifiers()


def test_info_is_a_dict():
    rows = spade_vf.episode_rows(["spade/Env-00001"], seeds=[0, 1], env_kwargs={"difficulty": 1})
    assert [r["info"] for r in rows] == [
        {"env_id": "spade/Env-00001-v0", "seed": s, "env_kwargs": {"difficulty": 1}} for s in (0, 1)]
