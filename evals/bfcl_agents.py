"""Agents for the BFCL suite: how a model's text becomes BFCL calls, and the agent loop.

- :func:`text_to_calls`: every ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  block of a completion (parsed by :func:`spade_envs.actions.parse_tool_calls`) becomes
  a BFCL call string ``name(key=value, ...)``; malformed blocks are skipped (BFCL drops
  undecodable output too). No calls means the agent ended its turn.
- :class:`BackendAgent`: any ``Backend`` (``spade_envs.agents.load_backend``) under
  BFCL's rules, batched across entries: each round, every conversation waiting for the
  model gets one completion from one ``Backend.chat`` call.
- :class:`ReferenceAgent` (``replay:reference``) replays the ground truth, and
  :class:`FileReplayAgent` (``replay:FILE.jsonl``) replays recorded trajectories,
  one JSON object per line: ``{"id": ..., "turns": [["call(...)", ...], ...]}`` (one
  list of call strings per user turn; a turn may also be a list of steps).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_envs.actions import parse_tool_calls
from spade_envs.errors import SpadeError

from .bfcl import MAX_STEPS_PER_TURN, BFCLEntry, tools_for_turn, user_messages
from .bfcl_exec import BFCLWorld, format_call

SYSTEM_PROMPT = (
    "You are an expert in composing functions. You are given a user request and a set of tools. "
    "Make one or more tool calls to achieve the purpose. If none of the tools can be used, or the request "
    "lacks required parameters, say so without calling a tool.\n"
    "To call tools, answer with one or more blocks of the form "
    '<tool_call>{"name": "tool_name", "arguments": {"param": value}}</tool_call>.\n'
    "At each turn, keep calling tools until you have fulfilled the user's request as well as you can. "
    "When you have no more tools to call, answer without any <tool_call>: that ends the turn."
)


@dataclass
class Trajectory:
    """What an agent did on one entry: per user turn, its steps, each a list of calls."""

    id: str
    turns: list[list[list[str]]] = field(default_factory=list)
    force_terminated: bool = False
    messages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def text_to_calls(text: str) -> list[str]:
    """BFCL call strings for the well-formed ``<tool_call>`` blocks of ``text``."""
    return [format_call(c.name, c.arguments) for c in parse_tool_calls(text) if not c.error]


class BFCLAgent(ABC):
    name: str

    @abstractmethod
    def run(self, entries: list[BFCLEntry]) -> list[Trajectory]:
        """One trajectory per entry, in order."""


class ReferenceAgent(BFCLAgent):
    """Plays each entry's ground-truth calls, one step per non-empty turn."""

    name = "replay:reference"

    def run(self, entries: list[BFCLEntry]) -> list[Trajectory]:
        return [Trajectory(e.id, [[list(gt)] if gt else [] for gt in e.ground_truth]) for e in entries]


class FileReplayAgent(BFCLAgent):
    """Replays ``{"id", "turns"}`` lines of a JSONL file; entries missing from it get no calls."""

    def __init__(self, path: str | Path) -> None:
        self.name = f"replay:{path}"
        self.records: dict[str, list[list[list[str]]]] = {}
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise SpadeError(f"cannot read trajectories from {path}: {exc.strerror or exc}") from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                self.records[str(obj["id"])] = [_steps(turn) for turn in obj["turns"]]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise SpadeError(f"{path}:{n}: expected {{\"id\": ..., \"turns\": [[call, ...], ...]}} ({exc})") from None

    def run(self, entries: list[BFCLEntry]) -> list[Trajectory]:
        out = []
        for e in entries:
            turns = self.records.get(e.id)
            out.append(Trajectory(e.id, turns if turns is not None else [[] for _ in e.ground_truth],
                                  error=None if turns is not None else "no trajectory for this id"))
        return out


def _steps(turn: Any) -> list[list[str]]:
    if not isinstance(turn, list):
        raise ValueError("each turn must be a list")
    if all(isinstance(c, str) for c in turn):
        return [list(turn)] if turn else []
    if all(isinstance(s, list) and all(isinstance(c, str) for c in s) for s in turn):
        return [list(s) for s in turn if s]
    raise ValueError("a turn is a list of call strings or a list of steps (lists of call strings)")


@dataclass
class _Live:
    entry: BFCLEntry
    world: BFCLWorld
    traj: Trajectory
    turn: int = 0
    steps: int = 0
    tools: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False


class BackendAgent(BFCLAgent):
    """A text-generation backend playing BFCL entries under BFCL's multi-turn rules."""

    def __init__(self, backend: Any, *, name: str | None = None, max_new_tokens: int = 256,
                 temperature: float = 0.0, seed: int | None = 0, batch_size: int = 8,
                 progress: Callable[[int], None] | None = None) -> None:
        self.backend = backend
        self.name = name or getattr(backend, "name", "backend")
        self.max_new_tokens, self.temperature, self.seed = max_new_tokens, temperature, seed
        self.batch_size = max(1, batch_size)
        self.progress = progress
        self.native_tools = _renders_tools(backend)

    def _system_prompt(self, entry: BFCLEntry) -> str:
        if self.native_tools:
            return SYSTEM_PROMPT
        return f"{SYSTEM_PROMPT}\n\nTools:\n{_tool_lines(tools_for_turn(entry, 0))}"

    def _open_turn(self, live: _Live) -> None:
        previous = {t["function"]["name"] for t in live.tools}
        live.tools = tools_for_turn(live.entry, live.turn)
        opening = user_messages(live.entry, live.turn)
        added = [t for t in live.tools if t["function"]["name"] not in previous]
        if live.turn > 0 and added and not self.native_tools:  # BFCL's prompting mode lists them in the message
            opening[0]["content"] = f"{_tool_lines(added)}\n{opening[0]['content']}"
        live.traj.messages.extend(opening)
        live.traj.turns.append([])
        live.steps = 0

    def _end_turn(self, live: _Live) -> None:
        live.turn += 1
        if live.turn >= live.entry.n_turns:
            live.done = True
            if self.progress:
                self.progress(1)
        else:
            self._open_turn(live)

    def run(self, entries: list[BFCLEntry]) -> list[Trajectory]:
        lives = []
        for e in entries:
            live = _Live(e, BFCLWorld(e.raw), Trajectory(e.id, messages=[{"role": "system", "content": self._system_prompt(e)}]))
            self._open_turn(live)
            lives.append(live)
        while True:
            waiting = [lv for lv in lives if not lv.done]
            if not waiting:
                break
            for start in range(0, len(waiting), self.batch_size):
                self._round(waiting[start : start + self.batch_size])
        return [lv.traj for lv in lives]

    def _round(self, batch: Sequence[_Live]) -> None:
        try:
            gens = self.backend.chat([lv.traj.messages for lv in batch], tools=[lv.tools for lv in batch],
                                     max_new_tokens=self.max_new_tokens, temperature=self.temperature, seed=self.seed)
        except SpadeError as exc:
            for lv in batch:
                lv.traj.error, lv.done = str(exc), True
            return
        for lv, gen in zip(batch, gens):
            text = getattr(gen, "text", gen)
            text = text if isinstance(text, str) else str(text)
            lv.traj.messages.append({"role": "assistant", "content": text})
            calls = text_to_calls(text)
            if not calls:
                self._end_turn(lv)
                continue
            lv.traj.turns[-1].append(calls)
            for result in lv.world.execute(calls):
                lv.traj.messages.append({"role": "tool", "content": result})
            lv.steps += 1
            if lv.steps > MAX_STEPS_PER_TURN:
                lv.traj.force_terminated, lv.done = True, True
                if self.progress:
                    self.progress(1)


def _tool_lines(tools: Sequence[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(t, ensure_ascii=False, sort_keys=True) for t in tools)


def _renders_tools(backend: Any) -> bool:
    """Whether the backend shows ``tools=`` to the model itself (no local tokenizer, as
    with an HTTP server, or a chat template that renders tools); otherwise the tool
    specs go into the system prompt."""
    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is None:
        return True
    try:
        from spade_envs.agents.chat import template_supports_tools
    except ImportError:
        return True
    return bool(template_supports_tools(tokenizer))


def make_bfcl_agent(spec: str, **options: Any) -> BFCLAgent:
    """``replay:reference``, ``replay:FILE.jsonl`` or any ``BACKEND:MODEL`` that
    ``spade_envs.agents.load_backend`` understands."""
    if spec == "replay:reference":
        return ReferenceAgent()
    if spec.startswith("replay:"):
        return FileReplayAgent(spec[len("replay:") :])
    if ":" not in spec:
        raise SpadeError(f"agent '{spec}' is not of the form BACKEND:MODEL (e.g. transformers:default)")
    try:
        from spade_envs.agents import load_backend
    except ImportError:
        raise SpadeError("model agents need spade_envs.agents (not available in this build)") from None
    backend_opts = {k: v for k, v in options.items() if k not in ("max_new_tokens", "temperature", "batch_size", "progress")}
    agent_opts = {k: v for k, v in options.items() if k in ("max_new_tokens", "temperature", "batch_size", "progress")}
    return BackendAgent(load_backend(spec, **backend_opts), name=spec, **agent_opts)
