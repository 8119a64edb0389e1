"""The methods of an environment program, declared once as data (DESIGN.md section 3).

:data:`METHODS` is the single-player format: one :class:`MethodSpec` per method a program
defines (or a session offers), in the order the designer's prompt states them. Every
place that needs the list builds it from here instead of restating it:

- the static check of a source (:func:`spade_envs.program.inspect_program`): the
  :func:`required_methods` (``reset`` and ``step``; ``reset`` alone for a subclass of
  ``ToolUseBaseEnv``, which supplies ``step``);
- the sandbox worker's dispatch (:mod:`spade_envs.sandbox.worker`): a request's
  operation is looked up with :func:`operation` and run with :func:`call_operation`;
- the session proxies (:mod:`spade_envs.runtime`, :mod:`spade_envs.sandbox.runtime`):
  the result of an optional method goes through its spec's ``check`` (a function of
  :mod:`spade_envs.contract`);
- the acceptance interface stage: :func:`interface_summary`;
- the designer's prompt (:mod:`spade_envs.designer.prompts`): the spec's ``prompt``
  lines, in order, are the method lines of its contract paragraph.

:data:`GAME_METHODS` is the multi-player format's method list
(:mod:`spade_envs.games.format`), which its runtime runs through its own transport.

Lookups read the module's :data:`METHODS` when called (never a copy taken at import),
so a method added here reaches every consumer. This module imports only the contract
checks below it in the layer list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .contract import check_hint_result, check_reset_result, check_solution_result, check_step_result


class Argument(str, Enum):
    """What a session operation passes to the method."""

    NONE = "none"  #: called without arguments
    SEED = "seed"  #: ``reset(seed)``: an int or None
    ACTION = "action"  #: ``step(action)``: the agent's text


@dataclass(frozen=True)
class MethodSpec:
    """One method of the program format."""

    #: the method's name, on the program's class (or the session's, see ``program``)
    name: str
    #: every program defines it (or inherits it from a local base class)
    required: bool
    #: the session operation that calls it (a worker request's ``op``); None when no
    #: session operation does (``__init__`` is the worker's ``open``; tool specs travel
    #: with ``open``/``reset``)
    op: str | None
    #: what the operation passes
    argument: Argument = Argument.NONE
    #: the check of its result on the caller's side (:mod:`spade_envs.contract`), which
    #: returns the normalised value or raises ``EnvProgramError``; None: no check
    check: Callable[[Any], Any] | None = None
    #: the result's shape as the interface stage reports it
    returns: str = ""
    #: its line(s) in the designer prompt's contract paragraph ("" when not stated there)
    prompt: str = ""
    #: ``ToolUseBaseEnv`` supplies it, so its subclasses need not define it
    tool_base_supplies: bool = False
    #: a method of the program (False: the session's own, such as ``snapshot``)
    program: bool = True


METHODS: tuple[MethodSpec, ...] = (
    # the contract (DESIGN.md section 3): __init__ may call reset(), need not (every runtime
    # resets before the first step); the prompt asks for the call, as SPADE's programs make it
    MethodSpec(
        "__init__", required=False, op=None,
        prompt="__init__(self, max_turns=10, **kwargs): store settings, then call self.reset().",
    ),
    MethodSpec(
        "reset", required=True, op="reset", argument=Argument.SEED, check=check_reset_result,
        returns="(str, dict)",
        prompt="reset(self, seed=None) -> (observation: str, info: dict). Build the task from\n"
               "  random.Random(seed): the same seed gives the same task, different seeds give\n"
               "  different tasks (and different answers).",
    ),
    MethodSpec(
        "step", required=True, op="step", argument=Argument.ACTION, check=check_step_result,
        returns="(str, float, bool, bool, dict)", tool_base_supplies=True,
        prompt="step(self, action: str) -> (observation: str, reward: float, terminated: bool,\n"
               "  truncated: bool, info: dict). Reward 1.0 for a win, 0.0 otherwise (partial credit\n"
               "  in [0, 1] is allowed). Truncate after max_turns steps. Never crash on malformed actions.",
    ),
    MethodSpec(
        "solution", required=False, op="solution", check=check_solution_result, returns="str",
        prompt="solution(self) -> str: what wins the CURRENT episode, as actions that replay to a win\n"
               "  (without it, or with a prose strategy instead, the environment can only be stored as\n"
               "  unverified, since no win can be replayed).",
    ),
    MethodSpec(
        "hint", required=False, op="hint", check=check_hint_result, returns="str | None",
        prompt="hint(self) -> str (recommended): a privileged hint about the strategy that does NOT\n"
               "  contain the answer.",
    ),
    MethodSpec("get_tools", required=False, op=None, returns="list[dict]", tool_base_supplies=True),
    MethodSpec("snapshot", required=False, op="snapshot", program=False),
    MethodSpec("close", required=False, op="close"),
)

#: the multi-player format's methods (:mod:`spade_envs.games.format`)
GAME_METHODS: tuple[MethodSpec, ...] = (
    MethodSpec("reset", required=True, op="reset", argument=Argument.SEED),
    MethodSpec("step", required=True, op="step", argument=Argument.ACTION),
    MethodSpec("observe", required=True, op="observe"),
    MethodSpec("current_player", required=True, op="current_player"),
    MethodSpec("scripted_action", required=True, op="scripted_action"),
    MethodSpec("solution", required=True, op="solution"),
    MethodSpec("legal_actions", required=False, op="legal_actions"),
    MethodSpec("hint", required=False, op="hint"),
    MethodSpec("close", required=False, op="close"),
)


def method(name: str, methods: Iterable[MethodSpec] | None = None) -> MethodSpec:
    """The spec of method ``name``; ``KeyError`` when the format has none."""
    for spec in METHODS if methods is None else methods:
        if spec.name == name:
            return spec
    raise KeyError(f"the program format has no method {name!r}")


def operation(op: str) -> MethodSpec | None:
    """The spec whose session operation is ``op``, or None."""
    for spec in METHODS:
        if spec.op == op:
            return spec
    return None


def operations() -> tuple[str, ...]:
    """The session operations of the format, in order."""
    return tuple(spec.op for spec in METHODS if spec.op)


def required_methods(tool_base: bool = False, methods: Iterable[MethodSpec] | None = None) -> tuple[str, ...]:
    """Names of the methods a program must define; with ``tool_base`` (the class
    subclasses ``ToolUseBaseEnv``) less those the base class supplies."""
    return tuple(s.name for s in (METHODS if methods is None else methods)
                 if s.required and not (tool_base and s.tool_base_supplies))


def call_operation(target: Any, op: str, arg: Any) -> Any:
    """Run operation ``op`` on ``target`` (a session): its spec's method, called with
    ``arg`` as the spec's ``argument`` says. ``ValueError`` for an unknown operation."""
    spec = operation(op)
    if spec is None:
        raise ValueError(f"unknown operation {op!r}")
    fn = getattr(target, spec.name)
    return fn() if spec.argument is Argument.NONE else fn(arg)


def check_result(name: str, value: Any) -> Any:
    """``value``, a result of method ``name``, through its spec's check."""
    spec = method(name)
    return value if spec.check is None else spec.check(value)


def interface_summary() -> str:
    """The required methods' result shapes, as the interface stage reports them."""
    return ", ".join(f"{s.name} -> {s.returns}" for s in METHODS if s.required)


def prompt_lines() -> tuple[str, ...]:
    """The methods' lines of the designer prompt's contract paragraph, in order."""
    return tuple(s.prompt for s in METHODS if s.prompt)
