r"""Prompt building: the system prompt, tools, and the chat template.

The texts come from :mod:`spade_envs.prompts` (what ``env.unwrapped.messages()`` returns),
so the rollout loop, the TRL adapter and the OpenEnv server prompt alike.

- Tools travel through the tokenizer's chat template (``tools=``) when the template
  supports tools (it mentions ``tools``); otherwise :func:`fallback_system_prompt` lists
  the specs in the system prompt and explains ``<tool_call>{json}</tool_call>`` and
  ``<answer>...</answer>``.
- Environment observations are ``user`` messages (``tool`` messages when the template
  supports tools and the previous action called one).
- Hint mode: the Gymnasium wrapper made with ``hint=True`` adds the privileged hint to the
  first observation; :func:`add_hint` does the same for callers that hold a raw hint.

:func:`render` turns messages into the prompt text; :func:`continuation_text` gives the
text that follows a generated assistant turn when an observation is appended, so the
rollout can extend a token-level trajectory without re-tokenizing model tokens
(:func:`prompt_ids` and :func:`continuation_ids` are the same as token ids).
"""

from __future__ import annotations

from typing import Any

# the prompt texts live with the environment (one source for eval, TRL and OpenEnv)
from ..prompts import SYSTEM_PROMPT, TEXT_ACTIONS, TOOL_ACTIONS, opening_messages, system_prompt  # noqa: E402,F401


def template_supports_tools(tokenizer: Any) -> bool:
    """True when the tokenizer's chat template renders a ``tools`` list."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):
        template = template.get("tool_use") or template.get("default") or ""
    return isinstance(template, str) and "tools" in template


def fallback_system_prompt(tools: list[dict] | None, base: str = SYSTEM_PROMPT) -> str:
    """The system prompt for templates without tool support: the tool specs as JSON and
    the ``<tool_call>``/``<answer>`` conventions (or ``\\boxed{}`` when there are no tools)."""
    return system_prompt(tools, native_tools=False, base=base)


def initial_messages(observation: str, tools: list[dict] | None, *, native_tools: bool,
                     system_prompt: str = SYSTEM_PROMPT) -> list[dict]:
    """``[system, user(observation)]`` for a fresh episode (:func:`spade_envs.prompts.opening_messages`)."""
    return opening_messages(observation, tools, native_tools=native_tools, base=system_prompt)


def add_hint(observation: str, hint: str | None) -> str:
    """The observation with the privileged hint appended (as the Gymnasium wrapper does)."""
    return f"{observation}\n\nHint: {hint}" if hint else observation


def observation_message(observation: str, *, native_tools: bool, called_tool: bool) -> dict:
    """The message carrying an environment observation after an action."""
    role = "tool" if native_tools and called_tool else "user"
    return {"role": role, "content": observation}


def render(tokenizer: Any, messages: list[dict], tools: list[dict] | None = None, *,
           add_generation_prompt: bool = True) -> str:
    """The prompt text for ``messages`` (tools go to the template only if it supports them)."""
    kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": add_generation_prompt}
    if tools and template_supports_tools(tokenizer):
        kwargs["tools"] = tools
    return tokenizer.apply_chat_template(messages, **kwargs)


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of rendered text (the template already holds any special tokens)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def prompt_ids(tokenizer: Any, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
    """Token ids of the first prompt: ``messages`` rendered with the generation prompt."""
    return encode(tokenizer, render(tokenizer, messages, tools, add_generation_prompt=True))


def continuation_ids(tokenizer: Any, messages: list[dict], tools: list[dict] | None,
                     generated_ids: list[int], content: str) -> list[int]:
    """Token ids to append after the generated tokens ``generated_ids`` (the assistant
    turn whose message ``content`` is second to last in ``messages``, before the new
    observation): :func:`continuation_text` of their decoding (special tokens kept)."""
    raw = tokenizer.decode(list(generated_ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)
    text, _ = continuation_text(tokenizer, messages, tools, raw, content)
    return encode(tokenizer, text)


def continuation_text(tokenizer: Any, messages: list[dict], tools: list[dict] | None,
                      generated_text: str, content: str) -> tuple[str, bool]:
    """Text to append after a generated assistant turn so the token sequence equals the
    rendering of ``messages`` (which end with that assistant turn and the next
    observation) plus the generation prompt.

    ``generated_text`` is the decoded completion including special tokens,
    ``content`` the assistant message content. Returns ``(text, exact)``; ``exact`` is
    False when the template rewrote the assistant turn and the continuation had to be
    approximated from the rendering of the trailing messages.
    """
    before = render(tokenizer, messages[:-2], tools, add_generation_prompt=True)
    full = render(tokenizer, messages, tools, add_generation_prompt=True)
    for head in (before + generated_text, before + content):
        if full.startswith(head):
            return full[len(head):], True
    # template changed the assistant turn (trimmed, reasoning removed...): take what the
    # template writes after the assistant turn, closed with the end-of-turn token
    with_assistant = render(tokenizer, messages[:-1], tools, add_generation_prompt=False)
    tail = full[len(with_assistant):] if full.startswith(with_assistant) else ""
    eos = getattr(tokenizer, "eos_token", None) or ""
    closing = "" if (eos and generated_text.endswith(eos)) else eos
    return closing + tail, False
