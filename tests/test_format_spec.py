"""The program format is declared once (:mod:`spade_envs.format_spec`) and the four
consumers derive from it: the worker's dispatch, the session proxies, the interface
stage (and the static required-method check) and the designer prompt's contract."""

from __future__ import annotations

import dataclasses

import pytest

from spade_envs import format_spec
from spade_envs.designer import prompts
from spade_envs.errors import EnvProgramError
from spade_envs.format_spec import METHODS, Argument, MethodSpec
from spade_envs.program import inspect_program
from spade_envs.runtime import EnvSession, InProcessRuntime
from spade_envs.sandbox.runtime import SandboxSession
from spade_envs.sandbox.worker import WorkerState

PEEK = MethodSpec("peek", required=False, op="peek", argument=Argument.SEED,
                  check=lambda v: f"checked {v}", returns="str",
                  prompt="peek(self, n) -> str: a method added to the spec only.")

PROGRAM = (
    "class PeekEnv:\n"
    "    def reset(self, seed=None):\n        self.n = 0\n        return 'go', {}\n"
    "    def step(self, action):\n        return 'done', 1.0, True, False, {}\n"
    "    def solution(self):\n        return 'x'\n"
    "    def hint(self):\n        return 'think'\n"
)


@pytest.fixture
def with_peek(monkeypatch):
    """The format with one more (required) method, patched where every consumer reads it."""
    spec = dataclasses.replace(PEEK, required=True)
    monkeypatch.setattr(format_spec, "METHODS", (*METHODS, spec))
    return spec


def test_spec_names_are_unique_and_ops_known():
    names = [m.name for m in METHODS]
    assert len(names) == len(set(names))
    assert format_spec.operations() == ("reset", "step", "solution", "hint", "snapshot", "close")
    assert format_spec.required_methods() == ("reset", "step")
    assert format_spec.required_methods(tool_base=True) == ("reset",)
    with pytest.raises(KeyError):
        format_spec.method("nope")


def test_prompt_paragraph_lists_exactly_the_spec_methods():
    paragraph = prompts.contract_paragraph()
    assert paragraph == prompts.CONTRACT
    method_lines = [line[2:] for line in paragraph.splitlines() if line.startswith("- ")]
    stated = [line.split("(", 1)[0] for line in method_lines if "(self" in line]
    assert stated == [m.name for m in METHODS if m.prompt]
    for line in format_spec.prompt_lines():
        assert f"- {line}\n" in paragraph


def test_added_method_reaches_prompt_worker_and_static_check(with_peek):
    # the prompt paragraph (and the prompt built for a mode)
    assert "- peek(self, n) -> str: a method added to the spec only." in prompts.contract_paragraph()
    user = prompts.build_prompt("puzzle", "optimization", prompts.Document("d", "text"))[1]["content"]
    assert "peek(self, n)" in user
    # the worker's op table
    assert "peek" in format_spec.operations()

    class Session:
        def peek(self, n):
            return f"peeked {n}"

    state = WorkerState(loader=None)
    state.sid, state.session = 7, Session()
    assert state.call("peek", 7, 3) == "peeked 3"
    # the static check now requires it, and the interface stage reports it
    with pytest.raises(EnvProgramError, match=r"peek\(\)"):
        inspect_program(PROGRAM)
    assert format_spec.interface_summary().endswith("peek -> str")


def test_worker_refuses_an_operation_not_in_the_spec():
    class Session:
        def peek(self, n):  # a method, but not an operation of the format
            return n

    state = WorkerState(loader=None)
    state.sid, state.session = 1, Session()
    with pytest.raises(ValueError, match="unknown operation 'peek'"):
        state.call("peek", 1, None)


def test_worker_dispatch_runs_each_spec_operation():
    """Every operation of the spec reaches the session method its spec names."""
    calls = []

    class Session:
        tools: list = []

        def __getattr__(self, name):
            def fn(*args):
                calls.append((name, args))
                return ("o", {}) if name == "reset" else name
            return fn

    state = WorkerState(loader=None)
    for op in format_spec.operations():
        state.sid, state.session = 1, Session()
        state.call(op, 1, 5)
    expected = [(m.name, () if m.argument is Argument.NONE else (5,)) for m in METHODS if m.op]
    assert calls == expected


def test_sessions_offer_every_operation():
    ops = set(format_spec.operations())
    assert ops <= set(EnvSession.__abstractmethods__) | {"step", "reset"}
    for op in ops:
        assert callable(getattr(SandboxSession, op))


def test_session_proxies_use_the_spec_check(monkeypatch):
    """Optional methods' results go through the spec's check in both runtimes."""
    checked = []
    patched = tuple(
        dataclasses.replace(m, check=lambda v, name=m.name: checked.append(name) or f"<{v}>")
        if m.name in ("solution", "hint") else m for m in METHODS)
    monkeypatch.setattr(format_spec, "METHODS", patched)
    session = InProcessRuntime().open(PROGRAM)
    assert session.solution() == "<x>" and session.hint() == "<think>"
    assert checked == ["solution", "hint"]

    class Fake(SandboxSession):
        def __init__(self):
            pass

        def _one(self, op, arg):
            return {"solution": "s", "hint": "h", "snapshot": {"a": 1}}[op]

    fake = Fake()
    assert fake.solution() == "<s>" and fake.hint() == "<h>" and fake.snapshot() == {"a": 1}


def test_sandbox_proxies_are_built_from_the_table(monkeypatch):
    """A no-argument method added to the table gets a sandbox proxy (run in the worker,
    through its check), as the worker's dispatch does; the shipped ones are built so."""
    from spade_envs.sandbox.runtime import format_proxies

    assert all(getattr(getattr(SandboxSession, name), "_from_format", False) for name in ("solution", "hint", "snapshot"))
    added = MethodSpec("peek0", required=False, op="peek0", check=lambda v: f"checked {v}")
    monkeypatch.setattr(format_spec, "METHODS", (*METHODS, added))

    @format_proxies
    class Fake(SandboxSession):
        def __init__(self):
            pass

        def _one(self, op, arg):
            return {"peek0": "p", "solution": "s"}[op]

    assert Fake().peek0() == "checked p" and Fake().solution() == "s"


def test_interface_summary_and_game_required_methods():
    from spade_envs.games.format import REQUIRED_METHODS

    assert format_spec.interface_summary() == "reset -> (str, dict), step -> (str, float, bool, bool, dict)"
    assert REQUIRED_METHODS == ("reset", "step", "observe", "current_player", "scripted_action", "solution")
