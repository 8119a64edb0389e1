"""Prompts of the Environment Designer (DESIGN.md sections 3 and 6).

:func:`build_prompt` returns the chat messages that ask a model for ONE environment
program of a given *mode* and *skill*, grounded on a corpus document:

- modes: ``puzzle`` (single answer in ``\\boxed{}``), ``game`` (multi-step, one action per
  turn) and ``tool`` (tool use through ``ToolUseBaseEnv``, final ``<answer>``);
- skills: the six SPADE skills of :data:`SKILLS`;
- the interface contract of DESIGN section 3, written out for the model (its method lines
  are those of :mod:`spade_envs.format_spec`, :func:`contract_paragraph`), with the mode's
  specifics (the ``ToolUseBaseEnv`` usage in tool mode);
- memory examples (:class:`~.memory.Retrieval`): positive sources abbreviated, negatives
  with why they were rejected, and the instruction to make something different.

:func:`prompt_hash` is a stable hash of the messages (sha256 of their canonical JSON,
first 16 hex digits), stored as provenance. :func:`repair_messages` continues a
conversation with the failing verdict.
"""

from __future__ import annotations

import ast
import hashlib
import json
from typing import Any

from spade_envs import format_spec

from .corpus import Document
from .memory import MemoryEntry, Retrieval
from .skills import DEFAULT_MODES, MODES, SKILLS  # noqa: F401  (written once in .skills)


SYSTEM = (
    "You are the Environment Designer. You write complete, executable Python training "
    "environments for a reasoning agent: state, transitions, reward and verification, in ONE "
    "Python file. You reply with the program in a single ```python code block and nothing else."
)

#: the contract paragraph's lines before the methods' lines
CONTRACT_HEAD = (
    "ONE Python file with exactly one public class whose name ends in \"Env\".",
    'Optional module-level METADATA = {"name": str, "skill": str, "description": str, "tags": [str]}.',
)
def preloaded_rule() -> str:
    """The contract line naming what a program may use without importing it, built from
    the prelude's table (:func:`spade_envs.program.preloaded_names`)."""
    import textwrap

    from spade_envs.program import NUMPY_NAMES, preloaded_names

    names = preloaded_names()
    cut = names.index(NUMPY_NAMES[-1]) + 1  # modules and numpy, then the bare names
    text = (f"Allowed without import: {' '.join(names[:cut])}, {' '.join(names[cut:])}, typing names. "
            "No files, no network, no os/subprocess, no input(); sys only for its constants "
            "(sys.maxsize, sys.float_info).")
    return textwrap.fill(text, width=90, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)


#: the contract paragraph's lines after the methods' lines
CONTRACT_RULES = (
    'The observation must never contain the answer; guessing ("0", "1", "yes", "42") must not win.',
    preloaded_rule(),
)


def contract_paragraph() -> str:
    """The program format as the model reads it: the methods' lines are the ``prompt``
    lines of :data:`spade_envs.format_spec.METHODS`, in order (read when called)."""
    lines = (*CONTRACT_HEAD, *format_spec.prompt_lines(), *CONTRACT_RULES)
    return "The program format (follow it exactly):\n" + "".join(f"- {line}\n" for line in lines)


#: the contract paragraph of the current format (DESIGN.md section 3)
CONTRACT = contract_paragraph()

MODE_RULES = {
    "puzzle": """\
Mode: single-answer puzzle.
- The first observation states the whole puzzle and says: answer with \\boxed{...}.
- step() extracts the content of \\boxed{...} from the action (re.search(r"\\\\boxed\\{([^}]*)\\}", action))
  and compares it EXACTLY with the answer; reward 1.0 and terminated=True when correct.
- solution() returns the bare answer (e.g. "417"); it is replayed as \\boxed{417}.
- The answer space must be large (not yes/no, not a digit 0-9).
""",
    "game": """\
Mode: multi-step game.
- Every step takes ONE action (a move such as "\\boxed{up}" or "\\boxed{3 4}") and
  returns what changed; the game is won only after several correct moves.
- solution() returns the winning moves of the current episode, one per line (each
  in \\boxed{...}, or bare moves, one per line; a path "A -> B -> C" or a comma list
  "up, up, left" is read too); stepping them in order from reset must win.
- Invalid moves get an explanatory observation (and reward 0.0), never an exception.
""",
    "tool": """\
Mode: tool use. Subclass ToolUseBaseEnv WITHOUT importing it (the name is provided):

class ExampleEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=10, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)   # it calls self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._state = {...}                 # the hidden data the tools read
        self._expected_answer = "..."       # the final answer, as a string
        self._tools = {"lookup": {"description": "...",
                       "parameters": {"type": "object",
                                      "properties": {"key": {"type": "string"}},
                                      "required": ["key"]}}}
        return "task text ... reply with <answer>...</answer>", {}

    def tool_lookup(self, key):             # one tool_<name> method per tool, returns a str
        return str(self._state.get(key, "not found"))

    def solution(self):                     # the tool calls, then the answer
        return '<tool_call>{"name": "lookup", "arguments": {"key": "..."}}</tool_call>\\n<answer>...</answer>'

- solution() may also be a numbered walkthrough of the declared tools, e.g.
  '1. lookup(key="a") -> ... 2. lookup(key="b") -> ... ANSWER: 42'; each call is replayed.
- Do NOT write step(), get_tools() or answer parsing: ToolUseBaseEnv validates the
  arguments against the JSON Schema, dispatches <tool_call>{"name": ..., "arguments": {...}}</tool_call>
  to tool_<name>, and checks <answer>...</answer> against self._expected_answer.
- No single tool result may be the answer: the agent must combine several calls.
""",
}

SKILL_IDEAS = {
    "mathematical reasoning": "arithmetic, number theory, combinatorics, probability or algebra computed from the document's facts",
    "logical deduction": "constraints, truth-tellers and liars, orderings or eliminations that force one answer",
    "spatial reasoning": "grids, maps, rotations, paths or positions",
    "pattern recognition": "sequences, ciphers, rules hidden in examples that must be inferred and applied",
    "optimization": "choosing the best plan, packing, scheduling or shortest routes under constraints",
    "causal inference": "interventions, counterfactuals and causes vs. correlations in a small system",
}


def abbreviate(source: str, max_statements: int = 6, max_lines: int = 80) -> str:
    """``source`` shortened for a prompt: docstrings and comments dropped, every function
    body cut to its first ``max_statements`` statements (then ``...``), at most
    ``max_lines`` lines. An unparsable source is cut by lines."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "\n".join(source.splitlines()[:max_lines])
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            continue
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body = body[1:] or [ast.Expr(ast.Constant(Ellipsis))]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(body) > max_statements:
            body = body[:max_statements] + [ast.Expr(ast.Constant(Ellipsis))]
        node.body = body  # type: ignore[attr-defined]
    lines = ast.unparse(tree).splitlines()
    if len(lines) > max_lines:
        lines = lines[:max_lines] + ["# ... (abbreviated)"]
    return "\n".join(lines)


def _example_block(entry: MemoryEntry, label: str) -> str:
    return (f"{label} {entry.env_id} \"{entry.name}\" ({entry.why()}):\n"
            f"```python\n{abbreviate(entry.source)}\n```")


def memory_section(retrieval: Retrieval | None) -> str:
    """The memory part of the prompt (empty string when there is nothing to show)."""
    if retrieval is None:
        return ""
    parts: list[str] = []
    for e in retrieval.positives:
        parts.append(_example_block(e, "GOOD EXAMPLE"))
    if retrieval.format_example is not None:
        parts.append(_example_block(retrieval.format_example, "FORMAT EXAMPLE"))
    if retrieval.negatives:
        lines = ["AVOID environments like these:"]
        lines += [f"- {e.env_id} \"{e.name}\": {e.description or 'no description'} -- {e.why()}"
                  for e in retrieval.negatives]
        parts.append("\n".join(lines))
    if retrieval.instruction:
        parts.append(retrieval.instruction)
    return "\n\n".join(parts)


def _contract(mode: str) -> str:
    """The program format the model must follow: DESIGN.md section 3, or the multi-player
    format of :mod:`spade_envs.games.format` for ``multiplayer`` mode."""
    if mode == "multiplayer":
        from spade_envs.games import FORMAT_PROMPT

        return (
            "Write a TWO-PLAYER game (zero-sum or cooperative; hidden information is welcome) "
            "in this format:\n" + FORMAT_PROMPT + '\nSet METADATA["num_players"] = 2.'
        )
    return contract_paragraph() + "\n" + MODE_RULES[mode]


def build_prompt(mode: str, skill: str, document: Document, retrieval: Retrieval | None = None) -> list[dict[str, str]]:
    """The designer's chat messages for one environment (see the module docstring).
    Raises ``ValueError`` for an unknown mode."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    idea = SKILL_IDEAS.get(skill, skill)
    user = "\n\n".join(p for p in (
        f"Write a {mode} environment that trains the skill \"{skill}\" ({idea}).",
        f"Ground it on this document (use its facts, names or concepts for the task):\n"
        f"<document ref=\"{document.ref}\">\n{document.text}\n</document>",
        _contract(mode),
        memory_section(retrieval),
        f'Set METADATA["skill"] = "{skill}" and tag it "{mode}". Reply with the complete program '
        "in ONE ```python code block.",
    ) if p)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def repair_messages(conversation: list[dict[str, str]], answer: str, verdict_name: str, detail: str) -> list[dict[str, str]]:
    """``conversation`` + the model's ``answer`` + a request to fix the failing verdict."""
    if verdict_name == "extract":
        ask = ("No Python program with a class whose name ends in \"Env\" was found in your answer. "
               "Reply with the complete program in ONE ```python code block.")
    else:
        ask = (f"Your environment was rejected at the acceptance stage \"{verdict_name}\": {detail}\n"
               "Fix this problem and reply with the complete corrected program in ONE ```python code block.")
    return [*conversation, {"role": "assistant", "content": answer}, {"role": "user", "content": ask}]


def prompt_hash(messages: list[dict[str, Any]]) -> str:
    """A stable hash of ``messages`` (16 hex digits)."""
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
