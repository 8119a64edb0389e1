"""``SPADE_SANDBOX_STATIC=0``: the static layer off, the jailed worker still running.

The switch is read when a worker's loader is built; with it off a program runs with plain
``compile``/``exec`` and the real builtins, so ``eval`` works and dunder walks compile.
"""

from __future__ import annotations

import pytest

from spade_envs.errors import EnvProgramError
from spade_envs.sandbox import SandboxRuntime
from spade_envs.sandbox.restricted import RestrictedLoader, static_layer_enabled

SRC = '''
class EvalEnv:
    def __init__(self):
        self.reset()
    def reset(self, seed=None):
        return "start", {}
    def step(self, action):
        return str(eval("6 * 7")) + " " + __name__ + " " + type(().__class__).__name__, 1.0, True, False, {}
    def solution(self):
        return "x"
'''


def test_switch_values(monkeypatch):
    monkeypatch.delenv("SPADE_SANDBOX_STATIC", raising=False)
    assert static_layer_enabled()
    for value, on in (("1", True), ("0", False), (" 0 ", False), ("yes", True)):
        monkeypatch.setenv("SPADE_SANDBOX_STATIC", value)
        assert static_layer_enabled() is on


def test_static_layer_refuses_eval_by_default():
    with pytest.raises(EnvProgramError) as info:
        RestrictedLoader(static=True).open(SRC, "EvalEnv")
    assert info.value.stage == "sandbox_compile"


def test_static_off_runs_plain_python_in_process_loader():
    session = RestrictedLoader(static=False).open(SRC, "EvalEnv", module_name="spade_env_switch")
    obs = session.step("go")[0]
    assert obs == "42 spade_env_switch type"
    session.forget()


def test_static_off_in_the_worker(monkeypatch):
    monkeypatch.setenv("SPADE_SANDBOX_STATIC", "0")
    rt = SandboxRuntime(max_workers=1, step_timeout_s=5.0)
    try:
        session = rt.open(SRC)
        obs = session.step("go")[0]
        assert obs.startswith("42 spade_env_")
    finally:
        rt.close()
