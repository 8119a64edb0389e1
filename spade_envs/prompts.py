r"""The first messages an agent sees: one source for every surface.

``env.unwrapped.messages()`` (and ``info["messages"]`` of ``reset``) build the opening
conversation of the current episode from here: a system message that states the
interaction protocol, the tools (when the chat template cannot render them itself) and
the answer format, then the first observation as the user message. ``spade eval`` (the
agents' rollout loop), the TRL adapter and the OpenEnv server all take their prompts from
it, so a model is trained and evaluated on the same instructions.

Formats (SPADE's conventions): final answers as ``\boxed{...}`` in text environments;
tool calls as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` and the final
answer of a tool-use task as ``<answer>...</answer>``. Three renderings of the system
message: ``native_tools=False`` lists the tool specs as JSON (templates without tool
support); ``native_tools=True`` leaves the specs to the chat template; ``answer_tool=True``
(function-calling trainers such as TRL, whose environments expose an ``answer`` tool)
asks for the final answer through that tool.
"""

from __future__ import annotations

import json
from typing import Any

SYSTEM_PROMPT = (
    "You are an agent acting in an interactive environment. Each of your replies is one "
    "action that the environment executes; it answers with an observation. Think briefly, "
    "then act. Work towards solving the task in as few turns as possible."
)

TEXT_ACTIONS = (
    "Give a final answer as \\boxed{answer}. When the task has several steps, reply with "
    "one step per turn in the format the environment asks for."
)

TOOL_ACTIONS = (
    "To call a tool, reply with\n"
    '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>\n'
    "using exactly one of the tools below and arguments that match its JSON schema. "
    "When you know the final answer, reply with <answer>your answer</answer>."
)

NATIVE_TOOL_ACTIONS = (
    "Use the tools offered to you. When you know the final answer, reply with <answer>your answer</answer>."
)

ANSWER_TOOL_ACTIONS = (
    "Use the tools offered to you to gather what you need. When you know the final answer "
    "(in a text game: your next move), call the `answer` tool with it instead of writing it."
)


def system_prompt(tools: list[dict[str, Any]] | None, *, native_tools: bool = False, answer_tool: bool = False,
                  base: str = SYSTEM_PROMPT) -> str:
    """The system message for an episode with these tool specs (see the module docstring)."""
    if answer_tool:
        return f"{base}\n\n{ANSWER_TOOL_ACTIONS}"
    if not tools:
        return f"{base}\n\n{TEXT_ACTIONS}"
    if native_tools:
        return f"{base}\n\n{NATIVE_TOOL_ACTIONS}"
    specs = "\n".join(json.dumps(t, ensure_ascii=False, sort_keys=True) for t in tools)
    return f"{base}\n\n{TOOL_ACTIONS}\n\nTools:\n{specs}"


def opening_messages(observation: str, tools: list[dict[str, Any]] | None, *, native_tools: bool = False,
                     answer_tool: bool = False, base: str = SYSTEM_PROMPT) -> list[dict[str, str]]:
    """``[system, user(observation)]`` for a fresh episode."""
    system = system_prompt(tools, native_tools=native_tools, answer_tool=answer_tool, base=base)
    return [{"role": "system", "content": system}, {"role": "user", "content": observation}]
