"""``ToolUseBaseEnv``: the base class of multi-turn tool-use environments.

It follows SPADE's convention, so environments SPADE's designer writes run unchanged:
the subclass calls ``super().__init__()``, fills ``self._tools`` (``name -> {"description",
"parameters"}``), ``self._state`` and ``self._expected_answer`` in ``reset``, implements
one ``tool_<name>(**arguments) -> str`` method per tool and (optionally) ``solution()``.
This class does the rest:

- ``get_tools()`` turns ``self._tools`` into OpenAI function specs;
- ``step(action)``: the FIRST ``<answer>`` wins (checked with ``_check_answer``; tool calls
  in the same message are not run, as in SPADE); otherwise every ``<tool_call>`` block
  (JSON or Qwen3.5 XML) is validated against its JSON Schema **before** running (a
  violation is an error observation naming it; the tool never runs), dispatched to
  ``tool_<name>`` and recorded in ``_call_history``.

Turn accounting, as in SPADE, where tool calls go through ``execute_tool`` and only
answers and unparseable messages reach the env's ``step``: a step whose calls all parse
does not use up ``max_turns`` (``turn_count`` counts answers and format errors); every
step is one agent turn, and the episode is truncated after ``max_agent_turns`` of them
(default 25, SPADE's agent-turn budget, or ``max_turns`` when that is larger) or
``max_turns`` counted steps. A message whose
blocks all fail to parse costs -0.1 and counts; one with some usable calls runs those.

Rewards: 1.0 for a correct answer, -0.1 for a format error (no call and no answer, or a
``<tool_call>`` whose body is not a usable call), 0 otherwise. A wrong answer in a
multi-turn env that keeps ``_user_messages`` and ``_current_msg`` names the pending step.

Deliberate differences from SPADE's class: arguments are schema-checked before a tool
runs, and nothing reveals ``solution()`` on truncation. Extensions a subclass may use
(SPADE's programs never need them): ``read_loose_answer`` (an easy level taking a plain
answer), ``prefetched_calls`` and ``fit_turns_to_solution``.
"""

from __future__ import annotations

from typing import Any

from .actions import extract_answer, parse_tool_calls
from .tools import ArgumentValidator, validate_tool_specs


class ToolUseBaseEnv:
    """Base for tool-use environments; see the module docstring for the contract."""

    #: SPADE's agent-turn budget: messages an agent may send in one episode
    DEFAULT_AGENT_TURNS = 25

    def __init__(self, max_turns: int = 10, **kwargs: Any) -> None:
        self.max_turns = max_turns
        # SPADE's agent loop allows 25 messages; an env that asks for more turns gets them
        self.max_agent_turns = int(kwargs.get("max_agent_turns", max(self.DEFAULT_AGENT_TURNS, int(max_turns))))
        self.turn_count = 0
        self.agent_turns = 0
        self._tools: dict[str, dict[str, Any]] = {}
        self._state: dict[str, Any] = {}
        self._call_history: list[dict[str, Any]] = []
        self._expected_answer: Any = None
        self._validator_key: Any = None
        self._validator: ArgumentValidator | None = None
        self.reset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Generated subclasses often forget to clear the per-episode counters in their
        # reset(); wrap it so every episode starts at turn 0 with an empty history.
        super().__init_subclass__(**kwargs)
        user_reset = cls.__dict__.get("reset")
        if user_reset is None or getattr(user_reset, "_spade_wrapped", False):
            return

        def reset(self: "ToolUseBaseEnv", *args: Any, **kw: Any) -> Any:
            self.turn_count = 0
            self.agent_turns = 0
            self._call_history = []
            return user_reset(self, *args, **kw)

        reset.__doc__ = getattr(user_reset, "__doc__", None)
        reset._spade_wrapped = True  # type: ignore[attr-defined]
        cls.reset = reset

    # -- to be provided by subclasses -------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        raise NotImplementedError("a ToolUseBaseEnv subclass must implement reset()")


    # -- provided ---------------------------------------------------------------------
    def get_tools(self) -> list[dict[str, Any]]:
        tools = []
        for name, spec in dict(self._tools or {}).items():
            spec = spec if isinstance(spec, dict) else {}
            tools.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": spec.get("description", ""),
                        "parameters": spec.get("parameters", {"type": "object", "properties": {}}),
                    },
                }
            )
        return tools

    def _arguments_validator(self) -> ArgumentValidator:
        key = repr(sorted((self._tools or {}).items(), key=lambda kv: kv[0]))
        if self._validator is None or key != self._validator_key:
            self._validator = ArgumentValidator(validate_tool_specs(self.get_tools()))
            self._validator_key = key
        return self._validator

    def execute_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one validated tool call; ``{"output": str, "returncode": 0 | 1}``."""
        problem = self._arguments_validator().check(name, arguments)
        if problem is not None:
            return {"output": problem, "returncode": 1}
        method = getattr(self, f"tool_{name}", None)
        if method is None or not callable(method):
            return {"output": f"Error: tool '{name}' is not implemented.", "returncode": 1}
        try:
            result = str(method(**arguments))
        except Exception as exc:  # a tool's own error is an observation, not a crash
            return {"output": f"Error calling {name}: {exc}", "returncode": 1}
        self._call_history.append({"name": name, "arguments": dict(arguments), "result": result})
        return {"output": result, "returncode": 0}

    # -- spade-envs extensions (SPADE's class has none of these; all are optional) --------
    def read_loose_answer(self, text: str) -> Any:
        """The answer of a reply with neither ``<answer>`` nor ``<tool_call>``, or None.

        None by default (such a reply is a format error, as in SPADE). An easy level may
        return e.g. ``loose_answer(text)`` (``from spade_answers import loose_answer``): a
        right plain answer then wins like ``<answer>``, a wrong one is a format error."""
        return None

    def prefetched_calls(self) -> str:
        """The reference solution's tool calls, made now, with their results: a block to
        append to an easy level's task ("these calls were already made for you")."""
        lines = []
        for call in parse_tool_calls(self.solution()):
            if call.error:
                continue
            args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
            lines.append(f"  {call.name}({args}) -> {getattr(self, 'tool_' + call.name)(**call.arguments)}")
        return "\nThese tool calls were already made for you (with their results):\n" + "\n".join(lines)

    def fit_turns_to_solution(self, asked: int) -> None:
        """Allow at least the reference solution's tool calls plus one answer turn
        (``max_turns`` = ``asked`` or more)."""
        self.max_turns = max(int(asked), self.solution().count("<tool_call>") + 2)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        action = action if isinstance(action, str) else str(action)
        self.agent_turns = getattr(self, "agent_turns", 0) + 1
        out_of_agent_turns = self.agent_turns >= getattr(self, "max_agent_turns", self.DEFAULT_AGENT_TURNS)
        if "<answer>" not in action and "<tool_call>" not in action:
            loose = self.read_loose_answer(action)
            if loose is not None and self._check_answer(loose):
                self.turn_count += 1
                return "Correct!", 1.0, True, False, {}
        answer = extract_answer(action)
        calls = [] if answer is not None else parse_tool_calls(action)
        if answer is not None or all(c.error for c in calls):  # also true when no call
            self.turn_count += 1  # answers and format errors use up the env's turns
        truncated = out_of_agent_turns or self.turn_count >= self.max_turns
        if answer is not None:
            if self._check_answer(answer):
                return "Correct!", 1.0, True, False, {}
            return self._incorrect_answer_feedback(), 0.0, False, truncated, {}
        if not calls:
            return (
                "Format error: call a tool with <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call> "
                "or submit <answer>...</answer>.",
                -0.1,
                False,
                truncated,
                {},
            )
        outputs = []
        for call in calls:
            if call.error:
                outputs.append(f"Format error: {call.error}.")
                continue
            outputs.append(self.execute_tool(call.name, call.arguments)["output"])
        reward = -0.1 if all(c.error for c in calls) else 0.0  # SPADE runs the calls that parse
        body = "\n".join(f"Tool result:\n{o}" for o in outputs)
        return body, reward, False, truncated, {}

    def _obs_suffix(self) -> str:
        """Kept for SPADE sources that append it to observations; tools travel as specs."""
        return ""

    def _incorrect_answer_feedback(self) -> str:
        """``Incorrect. Keep using tools.``; multi-turn envs (``_user_messages`` and
        ``_current_msg``) also hear which step is still pending, so an agent does not loop
        on ``<answer>done</answer>``."""
        base = "Incorrect. Keep using tools."
        msgs = getattr(self, "_user_messages", None)
        idx = getattr(self, "_current_msg", None)
        if isinstance(msgs, (list, tuple)) and isinstance(idx, int) and not isinstance(idx, bool) and 0 <= idx < len(msgs):
            return (
                f"{base} Step {idx + 1} of {len(msgs)} is not done yet: {msgs[idx]!s} "
                "Finish it with the tools before you submit <answer>done</answer>."
            )
        return base

    def _check_answer(self, answer: Any) -> bool:
        """Case-insensitive exact match, or numeric match within 0.01."""
        a = str(answer).strip()
        e = str(self._expected_answer).strip()
        if a.lower() == e.lower():
            return True
        try:
            clean = lambda s: s.replace("$", "").replace(",", "").strip()  # noqa: E731
            return abs(float(clean(a)) - float(clean(e))) < 0.01
        except (ValueError, TypeError, OverflowError):
            return False

    def close(self) -> None:
        pass
