"""ACEBench agent category (``agent_multi_turn``, ``agent_multi_step``) from a checkout.

ACEBench is not packaged; point :func:`load_acebench` at a checkout (``--data DIR`` or
``ACEBENCH_ROOT``). Files looked for, English by default: ``data_all/data_en/`` or
``data/en/`` holding ``data_agent_multi_turn.json`` / ``data_agent_multi_step.json``
(JSON lines: ``id``, ``question``, ``initial_config``, ``involved_classes``,
``function``) and ``possible_answer/`` with the same names (``ground_truth``: a list of
``{ClassName: {attribute: value}}``; ``mile_stone``: the reference calls, or a list of
alternative call lists). The scenario classes (``MessageApi``...) are ACEBench's own
Python code from the checkout, so running them needs ``trust_remote_code=True``.

- multi-step: the question is the user's request; the agent calls tools until it answers
  without a call (at most ``max_steps``).
- multi-turn: a simulated user, played by an LLM backend prompted with the question as
  its instructions, talks to the agent until it says ``finish conversation``.

Scores, as ACEBench defines them: **end-state accuracy** (each ground-truth class's
attributes equal the final instance's; nested dicts compared key by key) and **process
accuracy** (1.0 for an entry whose end state is right, else the fraction of milestones
found in order in the agent's calls, ACEBench's scan in which a missing milestone
consumes the rest, best over alternative milestone lists). Calls are compared after
parsing (name and keyword values), not as raw text.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_envs.errors import SpadeError, UntrustedCodeError

from .bfcl import doc_to_tool
from .bfcl_agents import text_to_calls
from .bfcl_exec import CallParseError, parse_call, stringify_result
from .stats import mean_summary, rate_summary

SUITE_NAME = "acebench-agent"
CATEGORIES = ("agent_multi_turn", "agent_multi_step")
FINISH = "finish conversation"
USER_PROMPT = ("You are playing a user talking to an assistant that can call tools. Your instructions: {question}\n"
               "Say one short message at a time. When your goals are met, reply exactly: finish conversation")


@dataclass
class AceEntry:
    id: str
    category: str
    question: str
    initial_config: dict[str, Any]
    involved_classes: list[str]
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, Any]]
    milestones: list[Any]


def find_data_dir(root: str | Path, language: str = "en") -> Path:
    root = Path(root)
    for cand in (root / "data_all" / f"data_{language}", root / "data" / language, root):
        if (cand / "possible_answer").is_dir():
            return cand
    raise SpadeError(f"{root} does not look like an ACEBench checkout (no data_all/data_{language}/possible_answer)")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8").strip()
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_acebench(root: str | Path | None = None, categories: Sequence[str] | None = None, *,
                  language: str = "en", limit: int | None = None) -> list[AceEntry]:
    """Entries of the agent categories of an ACEBench checkout."""
    root = root or os.environ.get("ACEBENCH_ROOT")
    if not root:
        raise SpadeError("the acebench-agent suite needs an ACEBench checkout: pass --data DIR or set ACEBENCH_ROOT")
    base = find_data_dir(root, language)
    out: list[AceEntry] = []
    for cat in categories or CATEGORIES:
        if cat not in CATEGORIES:
            raise SpadeError(f"unknown ACEBench agent category '{cat}'; choose one of: {', '.join(CATEGORIES)}")
        name = f"data_{cat}.json"
        if not (base / name).exists():
            continue
        answers = {a["id"]: a for a in _jsonl(base / "possible_answer" / name)}
        for p in _jsonl(base / name):
            a = answers.get(p["id"])
            if a is None:
                raise SpadeError(f"ACEBench data: no possible answer for {p['id']}")
            gt = a["ground_truth"] if isinstance(a["ground_truth"], list) else [a["ground_truth"]]
            out.append(AceEntry(p["id"], cat, str(p["question"]), p.get("initial_config", {}) or {},
                                list(p.get("involved_classes", [])), list(p.get("function", [])), gt,
                                list(a.get("mile_stone", []))))
    if not out:
        raise SpadeError(f"no ACEBench agent data under {base}")
    return out[:limit] if limit is not None else out


def checkout_resolver(root: str | Path, *, trust_remote_code: bool = False) -> Callable[[str], type]:
    """A class resolver that imports ``class Name`` from the checkout's ``.py`` files."""
    if not trust_remote_code:
        raise UntrustedCodeError("ACEBench's scenario classes are code from your checkout; pass "
                                 "trust_remote_code=True (CLI: --trust-remote-code) to run them in-process")
    files = sorted(Path(root).rglob("*.py"))
    cache: dict[str, type] = {}

    def resolve(name: str) -> type:
        if name not in cache:
            pattern = re.compile(rf"^class {re.escape(name)}\b", re.M)
            for f in files:
                if pattern.search(f.read_text(encoding="utf-8", errors="replace")):
                    spec = importlib.util.spec_from_file_location(f"acebench_scenario_{len(cache)}_{f.stem}", f)
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)  # trusted by the caller
                    cache[name] = getattr(module, name)
                    break
            else:
                raise SpadeError(f"class {name} not found in the ACEBench checkout {root}")
        return cache[name]

    return resolve


class AceWorld:
    """Instances of an entry's classes, loaded with its initial config."""

    def __init__(self, entry: AceEntry, resolve: Callable[[str], type]) -> None:
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for name in entry.involved_classes:
            inst = resolve(name)()
            config = copy.deepcopy(entry.initial_config.get(name, {}))
            if hasattr(inst, "_load_scenario"):
                inst._load_scenario(config)
            else:
                for k, v in config.items():
                    setattr(inst, k, v)
            self.instances[name] = inst
            self.methods.update({m: getattr(inst, m) for m in dir(inst)
                                 if not m.startswith("_") and callable(getattr(inst, m))})

    def execute(self, call: str) -> str:
        try:
            parsed = parse_call(call)
            method = self.methods[parsed.name]
        except CallParseError as exc:
            return f"Error: {exc}"
        except KeyError:
            return f"Error: no function named {call.split('(')[0]}"
        try:
            return stringify_result(method(*parsed.args, **parsed.kwargs))
        except Exception as exc:  # a scenario's own error is an observation
            return f"Error: {exc}"

    def final_state(self, ground_truth: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """``[{Class: {attr: value}}]`` for the classes and attributes the ground truth names."""
        out = []
        for item in ground_truth:
            for cls, attrs in item.items():
                inst = self.instances.get(cls)
                if inst is not None:
                    out.append({cls: {a: copy.deepcopy(getattr(inst, a, None)) for a in attrs}})
        return out


def end_state_ok(result: Sequence[dict[str, Any]], ground_truth: Sequence[dict[str, Any]]) -> bool:
    """ACEBench's end-to-end check: same number of classes; for each ground-truth class
    the model class with the same attribute keys; every attribute equal (dicts: each of
    the ground truth's keys present and equal)."""
    if len(result) != len(ground_truth):
        return False
    for gt in ground_truth:
        (cls, expected), = gt.items()
        match = next((m for m in result if set(m) == set(gt)), None)
        if match is None:
            return False
        got = match[cls]
        for attr, value in got.items():
            if attr not in expected:
                return False
            want = expected[attr]
            if isinstance(want, dict):
                if not isinstance(value, dict) or any(k not in value or value[k] != v for k, v in want.items()):
                    return False
            elif want != value:
                return False
    return True


def _call_key(text: str) -> Any:
    try:
        p = parse_call(text)
        return (p.name, tuple(repr(a) for a in p.args), tuple(sorted((k, repr(v)) for k, v in p.kwargs.items())))
    except CallParseError:
        return text.strip()


def process_accuracy(milestones: Sequence[Any], calls: Sequence[str], end_ok: bool) -> float:
    """ACEBench's process accuracy (see the module docstring)."""
    if end_ok:
        return 1.0
    alternatives = milestones if milestones and isinstance(milestones[0], list) else [milestones]
    observed = [_call_key(c) for c in calls]
    best = 0.0
    for alt in alternatives:
        if not alt:
            return 1.0
        i, hit = 0, 0
        for stone in alt:
            key = _call_key(stone)
            while i < len(observed):
                i += 1
                if observed[i - 1] == key:
                    hit += 1
                    break
        best = max(best, hit / len(alt))
    return round(best, 3)


@dataclass
class AceTrace:
    calls: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


def play_entry(entry: AceEntry, backend: Any, resolve: Callable[[str], type], *, user_backend: Any = None,
               max_steps: int = 20, max_user_turns: int = 10, max_new_tokens: int = 256) -> tuple[AceWorld, AceTrace]:
    """One episode: the agent (``backend``) against the scenario, with a simulated user
    (``user_backend``, default the same backend) for multi-turn entries."""
    world, trace = AceWorld(entry, resolve), AceTrace()
    tools = [doc_to_tool(f) for f in entry.functions]
    user_backend = user_backend or backend
    user_msgs = [{"role": "system", "content": USER_PROMPT.format(question=entry.question)},
                 {"role": "user", "content": "Hello, how can I help you?"}]
    multi_turn = entry.category == "agent_multi_turn"
    opening = _user_say(user_backend, user_msgs, max_new_tokens) if multi_turn else entry.question
    trace.messages.append({"role": "user", "content": opening})
    for _ in range(max_user_turns if multi_turn else 1):
        for _step in range(max_steps):
            text = _text(backend.chat([trace.messages], tools=[tools], max_new_tokens=max_new_tokens, temperature=0.0)[0])
            trace.messages.append({"role": "assistant", "content": text})
            calls = text_to_calls(text)
            if not calls:
                break
            for call in calls:
                trace.calls.append(call)
                trace.messages.append({"role": "tool", "content": world.execute(call)})
        if not multi_turn:
            break
        user_msgs.append({"role": "user", "content": trace.messages[-1]["content"]})
        reply = _user_say(user_backend, user_msgs, max_new_tokens)
        if FINISH in reply.lower():
            break
        trace.messages.append({"role": "user", "content": reply})
    return world, trace


def _text(gen: Any) -> str:
    text = getattr(gen, "text", gen)
    return text if isinstance(text, str) else str(text)


def _user_say(user_backend: Any, user_msgs: list[dict[str, Any]], max_new_tokens: int) -> str:
    reply = _text(user_backend.chat([user_msgs], max_new_tokens=max_new_tokens, temperature=0.0)[0])
    user_msgs.append({"role": "assistant", "content": reply})
    return reply


def score(entry: AceEntry, world: AceWorld, calls: Sequence[str]) -> dict[str, Any]:
    result = world.final_state(entry.ground_truth)
    ok = end_state_ok(result, entry.ground_truth)
    return {"id": entry.id, "category": entry.category, "passed": ok, "end_state_ok": ok,
            "process_acc": process_accuracy(entry.milestones, calls, ok), "n_calls": len(calls)}


def replay_reference(entry: AceEntry, resolve: Callable[[str], type]) -> tuple[AceWorld, list[str]]:
    """Execute the (first) milestone list: the harness check for ``replay:reference``."""
    alt = entry.milestones[0] if entry.milestones and isinstance(entry.milestones[0], list) else entry.milestones
    world = AceWorld(entry, resolve)
    for call in alt:
        world.execute(call)
    return world, list(alt)


def run_acebench(entries: Sequence[AceEntry], resolve: Callable[[str], type], *, backend: Any = None,
                 user_backend: Any = None, progress: Callable[[int], None] | None = None, **play_opts: Any
                 ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Score ``backend`` (None: replay the reference milestones) on ``entries``."""
    rows = []
    for entry in entries:
        if backend is None:
            world, calls = replay_reference(entry, resolve)
        else:
            world, trace = play_entry(entry, backend, resolve, user_backend=user_backend, **play_opts)
            calls = trace.calls
        rows.append(score(entry, world, calls))
        if progress:
            progress(1)
    summary = {"overall": rate_summary(r["passed"] for r in rows),
               "end_state_acc": rate_summary(r["end_state_ok"] for r in rows)["rate"],
               "process_acc": mean_summary(r["process_acc"] for r in rows)["mean"],
               "per_category": {c: rate_summary(r["passed"] for r in rows if r["category"] == c)
                                for c in dict.fromkeys(r["category"] for r in rows)}}
    return rows, summary
