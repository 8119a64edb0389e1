"""``ToolUseBaseEnv``: the base class of multi-turn tool-use environments.

It follows the SPADE convention, so environments SPADE's designer writes run unchanged:
the subclass calls ``super().__init__()``, fills ``self._tools`` (``name -> {"description",
"parameters"}``), ``self._state`` and ``self._expected_answer`` in ``reset``, implements
one ``tool_<name>(**arguments) -> str`` method per tool and a ``solution()``. This class
does the rest:

- ``get_tools()`` turns ``self._tools`` into OpenAI function specs;
- ``step(action)`` parses ``<answer>`` (checked with ``_check_answer``) or one or more
  ``<tool_call>`` blocks, validates each call's arguments against its JSON Schema
  **before** running it (a violation is an error observation naming it; the tool never
  runs), dispatches to ``tool_<name>`` and records ``_call_history``;
- episodes end with reward 1.0 on a correct answer, and are truncated after
  ``max_turns`` steps. Unlike SPADE's original, nothing reveals the solution.

Format errors cost -0.1 (SPADE's shaping); wrong answers and tool calls give 0.
"""

from __future__ import annotations

from typing import Any

from .actions import extract_answer, parse_tool_calls
from .tools import ArgumentValidator, validate_tool_specs


class ToolUseBaseEnv:
    """Base for tool-use environments; see the module docstring for the contract."""

    def __init__(self, max_turns: int = 10, **kwargs: Any) -> None:
        self.max_turns = max_turns
        self.turn_count = 0
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
            self._call_history = []
            return user_reset(self, *args, **kw)

        reset.__doc__ = getattr(user_reset, "__doc__", None)
        reset._spade_wrapped = True  # type: ignore[attr-defined]
        cls.reset = reset

    # -- to be provided by subclasses -------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        raise NotImplementedError("a ToolUseBaseEnv subclass must implement reset()")

    def solution(self) -> str:
        raise NotImplementedError("a ToolUseBaseEnv subclass must implement solution()")

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

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        truncated = self.turn_count >= self.max_turns
        action = action if isinstance(action, str) else str(action)
        answer = extract_answer(action)
        if answer is not None:
            if self._check_answer(answer):
                return "Correct!", 1.0, True, False, {}
            return self._incorrect_answer_feedback(), 0.0, False, truncated, {}
        calls = parse_tool_calls(action)
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
        body = "\n".join(f"Tool result:\n{o}" for o in outputs)
        return body, 0.0, False, truncated, {}

    def _obs_suffix(self) -> str:
        """Kept for SPADE sources that append it to observations; tools travel as specs."""
        return ""

    def _incorrect_answer_feedback(self) -> str:
        return "Incorrect. Keep using tools."

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
