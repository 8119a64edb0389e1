"""Runtimes: the one interface through which environment code is executed.

Callers (the Gymnasium wrapper, acceptance, agents, evals) never run a program directly:
they ask a runtime to ``open`` a source and get an :class:`EnvSession` back. Two
implementations exist:

- :class:`InProcessRuntime` executes with the real interpreter. Only for code shipped in
  this package (the seed suite) or code whose user said ``trust_remote_code=True``.
- ``spade_envs.sandbox.SandboxRuntime`` executes in isolated worker processes under a
  RestrictedPython policy (DESIGN.md section 5). It is the default for everything else.

Which of the two runs a given source is decided by :func:`spade_envs.trust.get_runtime`;
this module never imports the sandbox (the sandbox builds on it), so the dependency runs
one way: ``runtime`` <- ``sandbox`` <- ``trust``.

Contract of every session method: it returns values that passed
:mod:`spade_envs.contract`, or raises :class:`EnvProgramError` (the program broke the
format) or :class:`EnvExecutionError` (it raised, hung or broke a limit). It never lets
any other exception escape.

One post-termination rule for every environment, kept here and not by programs: once a
``step`` returned ``terminated`` or ``truncated``, the next ``step`` without a ``reset``
raises :class:`EpisodeOverError` ("call reset()") and the program is not called.
:class:`EnvSession` applies it to the ``step``/``reset`` of every subclass; runtimes that
batch (``step_batch``) apply it per call, also to later calls of a session within the
same batch.
"""

from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from .actions import parse_tool_calls
from .contract import StepResult, check_reset_result, check_step_result
from .errors import EnvExecutionError, EnvProgramError, EpisodeOverError, FailureKind, NoSolutionError, SpadeError
from .format_spec import check_result
from .parameters import resolve_kwargs
from .program import construct_env, inspect_program, trusted_prelude
from .solutions import needs_final_answer
from .tools import ArgumentValidator, validate_tool_specs


def ends_episode(result: Any) -> bool:
    """Whether a step result says the episode ended (``terminated`` or ``truncated``)."""
    return isinstance(result, tuple) and len(result) == 5 and (result[2] is True or result[3] is True)


def _step_rule(step: Any) -> Any:
    @functools.wraps(step)
    def ruled_step(self: EnvSession, action: Any) -> Any:
        if self.episode_over:
            raise EpisodeOverError()
        result = step(self, action)
        if ends_episode(result):
            self.episode_over = True
        return result

    ruled_step._episode_rule = True  # type: ignore[attr-defined]
    return ruled_step


def keeps_episode_rule(method: Any) -> Any:
    """Mark a session's ``step``/``reset`` that keeps the post-termination rule itself
    (through its runtime's batched calls), so :class:`EnvSession` does not wrap it."""
    method._episode_rule = True
    return method


def _reset_rule(reset: Any) -> Any:
    @functools.wraps(reset)
    def ruled_reset(self: EnvSession, *args: Any, **kwargs: Any) -> Any:
        result = reset(self, *args, **kwargs)
        self.episode_over = False
        return result

    ruled_reset._episode_rule = True  # type: ignore[attr-defined]
    return ruled_reset


class EnvSession(ABC):
    """One live instance of an environment program.

    Every subclass's ``step`` and ``reset`` are wrapped (``__init_subclass__``) with the
    post-termination rule of the module docstring: ``episode_over`` turns True when a
    step returns ``terminated`` or ``truncated``, ``step`` then raises
    :class:`EpisodeOverError`, and a successful ``reset`` starts a playable episode."""

    #: OpenAI function specs of the current episode (validated; [] for text-only envs)
    tools: list[dict[str, Any]]
    #: the last step ended the episode and no reset came since (a fresh session is playable)
    episode_over: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, rule in (("step", _step_rule), ("reset", _reset_rule)):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_episode_rule", False):
                setattr(cls, name, rule(method))

    @abstractmethod
    def reset(self, seed: int | None = None) -> tuple[str, dict]: ...

    @abstractmethod
    def step(self, action: str) -> StepResult: ...

    @abstractmethod
    def solution(self) -> str:
        """The raw text of the program's ``solution()`` for the current episode."""

    @abstractmethod
    def hint(self) -> str | None:
        """The program's ``hint()``, or None when it defines none."""

    @abstractmethod
    def snapshot(self) -> Any:
        """JSON-able public state (``_state`` when the program keeps one), for state checks."""

    @abstractmethod
    def close(self) -> None: ...


class EnvRuntime(ABC):
    """Opens sessions; may batch calls across sessions."""

    @abstractmethod
    def open(self, source: str, *, kwargs: dict[str, Any] | None = None, filename: str = "<env>") -> EnvSession:
        """Compile ``source``, construct its environment class with ``kwargs``.

        A fresh instance need not be playable: callers reset before the first step (the
        program contract, DESIGN.md section 3; its methods are
        :data:`spade_envs.format_spec.METHODS`)."""

    def step_batch(self, calls: Sequence[tuple[EnvSession, str]]) -> list[StepResult | SpadeError]:
        """Step several sessions; each slot holds a result or the error of that session."""
        out: list[StepResult | SpadeError] = []
        for session, action in calls:
            try:
                out.append(session.step(action))
            except SpadeError as exc:
                out.append(exc)
        return out

    def reset_batch(self, calls: Sequence[tuple[EnvSession, int | None]]) -> list[tuple[str, dict] | SpadeError]:
        out: list[tuple[str, dict] | SpadeError] = []
        for session, seed in calls:
            try:
                out.append(session.reset(seed))
            except SpadeError as exc:
                out.append(exc)
        return out

    def close(self) -> None:
        pass


def jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON round-trip copy of ``value`` (unknown objects become their repr)."""
    try:
        return json.loads(json.dumps(value, default=repr, sort_keys=True))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


class ToolGate:
    """Validates tool calls in an action before the program sees it.

    ``ToolUseBaseEnv`` programs validate themselves; programs with their own ``step``
    that declare tools get the same guarantee here: a malformed call or arguments that
    violate the tool's schema produce an error observation and the program is not called.
    """

    def __init__(self, specs: list[dict[str, Any]]) -> None:
        self.validator = ArgumentValidator(specs) if specs else None

    def check(self, action: str) -> str | None:
        if self.validator is None:
            return None
        for call in parse_tool_calls(action):
            problem = f"Error: {call.error}." if call.error else self.validator.check(call.name, call.arguments)
            if problem:
                return problem
        return None


def program_tools(env: Any, known: tuple[str, list[dict[str, Any]]] | None = None
                  ) -> tuple[str, list[dict[str, Any]]]:
    """The validated tool specs of a live program object (``[]`` when it has none), with
    the key they were validated under: the canonical JSON of what ``get_tools()``
    returned and the ``tool_*`` methods present. ``known``, an earlier result, is
    returned unchanged when the key is the same (programs return the same specs on every
    reset; validating them again costs more than the reset itself)."""
    get_tools = getattr(env, "get_tools", None)
    if get_tools is None:
        return "", []
    implemented = {n[len("tool_") :] for n in dir(env) if n.startswith("tool_")}
    raw = get_tools()
    try:
        key = json.dumps([raw, sorted(implemented)], sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # not plain JSON: validation says why
        key = ""
    if key and known is not None and known[0] == key:
        return known
    return key, validate_tool_specs(raw, implemented=implemented)


def guarded_call(what: str, fn, *args: Any) -> Any:
    """Call environment code, turning anything it raises into :class:`EnvExecutionError`."""
    try:
        return fn(*args)
    except SpadeError:
        raise
    except RecursionError:
        raise EnvExecutionError(f"{what} exceeded the recursion limit", kind=FailureKind.RECURSION) from None
    except MemoryError:
        raise EnvExecutionError(f"{what} ran out of memory", kind=FailureKind.MEMORY) from None
    except Exception as exc:  # environment code may raise anything
        raise EnvExecutionError(f"{what} raised {type(exc).__name__}: {exc}", kind=FailureKind.ERROR) from None


class InProcessSession(EnvSession):
    def __init__(self, env: Any) -> None:
        from .toolbase import ToolUseBaseEnv

        self._env = env
        self._self_validating = isinstance(env, ToolUseBaseEnv)
        self._tools_key: tuple[str, list[dict[str, Any]]] | None = None
        self._gate = ToolGate([])
        try:
            self._refresh_tools()
        except EnvExecutionError:
            pass  # get_tools() may need reset() (a fresh instance need not be playable): read again at reset

    def _refresh_tools(self) -> None:
        known = self._tools_key
        self._tools_key = guarded_call("get_tools()", program_tools, self._env, known)
        if self._tools_key is not known:
            self._gate = ToolGate([] if self._self_validating else self.tools)

    @property
    def tools(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return self._tools_key[1] if self._tools_key is not None else []

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        result = check_reset_result(guarded_call("reset()", lambda: self._env.reset(seed=seed)))
        self._refresh_tools()
        return result

    def step(self, action: str) -> StepResult:
        problem = self._gate.check(action)
        if problem is not None:
            return problem, 0.0, False, False, {"tool_error": problem}
        return check_step_result(guarded_call("step()", self._env.step, action))

    def solution(self) -> str:
        fn = getattr(self._env, "solution", None)
        if fn is None or not callable(fn):
            raise NoSolutionError(f"{type(self._env).__name__} defines no solution(): it plays, but no win can be replayed")
        value = guarded_call("solution()", fn)
        text = check_result("solution", value if isinstance(value, str) else str(value))  # SPADE str()s it
        if self._self_validating and needs_final_answer(text, self.tools):
            # SPADE's tool-use solutions are free text; when they call tools but name no
            # final answer, the base class's expected answer completes the replay
            expected = getattr(self._env, "_expected_answer", None)
            if expected is not None:
                text = f"{text}\n<answer>{expected}</answer>"
        return text

    def hint(self) -> str | None:
        """The program's ``hint()``; None when it defines none, or when calling it without
        arguments raises or gives no str (SPADE never calls it: such a hint is no hint)."""
        fn = getattr(self._env, "hint", None)
        if fn is None:
            return None
        try:
            return check_result("hint", guarded_call("hint()", fn))
        except EnvProgramError:
            return None
        except EnvExecutionError as exc:
            if exc.kind in (FailureKind.ERROR, FailureKind.RECURSION):
                return None
            raise

    def snapshot(self) -> Any:
        state = getattr(self._env, "_state", None)
        if state is None:
            state = {k: v for k, v in vars(self._env).items() if not k.startswith("_")}
        return jsonable(state)

    def close(self) -> None:
        fn = getattr(self._env, "close", None)
        if fn is not None:
            guarded_call("close()", fn)


class InProcessRuntime(EnvRuntime):
    """Runs programs with the real interpreter: trusted code only."""

    def open(self, source: str, *, kwargs: dict[str, Any] | None = None, filename: str = "<env>") -> EnvSession:
        import sys
        import types

        info = inspect_program(source, filename)
        kwargs = resolve_kwargs(source, kwargs, filename)
        # a registered module, as SPADE's loader makes: dataclasses and enum look it up
        module = types.ModuleType(f"spade_env_{info.sha256[:12]}")
        namespace = module.__dict__
        namespace.update(trusted_prelude())
        sys.modules[module.__name__] = module
        try:
            code = compile(source, filename, "exec", dont_inherit=True)
            exec(code, namespace)  # noqa: S102 - trusted by contract of this class
        except Exception as exc:
            raise EnvProgramError(f"{filename}: module body raised {type(exc).__name__}: {exc}", stage="compile") from None
        cls = namespace[info.class_name]
        return InProcessSession(guarded_call(f"{info.class_name}()", lambda: construct_env(cls, kwargs or {})))
