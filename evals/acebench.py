"""ACEBench (English) through spade-envs' harness: the agent, normal and special categories.

ACEBench is not packaged; point :func:`load_acebench` at a checkout (``--data DIR`` or
``ACEBENCH_ROOT``) holding ``data_all/data_en/data_<category>.json`` and
``possible_answer/`` (JSON lines), ``model_inference/`` (the scenario classes) and, for
the normal categories and the agreement check, ``model_eval/`` and ``eval_main.py``.

- **agent** (:data:`AGENT`): the agent talks ACEBench's call syntax
  (``[ApiName(key='value')]``, see :mod:`.acebench_calls`) to the scenario classes, which
  run in the sandbox (:mod:`.acebench_world`; in-process only with
  ``trust_remote_code=True``). ``agent_multi_step``: the question is the request and
  every agent message goes to execution until the agent says ``finish conversation``.
  ``agent_multi_turn``: a simulated user (any backend, prompted with the entry's
  instruction; :class:`ScriptedUser` for the reference replay) talks to the agent; agent
  messages that start with a call list go to execution, others to the user, until the
  user says ``finish conversation``. Each entry keeps ACEBench's ``result`` (final state)
  and ``process`` (the messages sent to execution) records, so ACEBench's own
  ``agent_eval`` can score the run (:mod:`.acebench_agreement`).
- **normal** / **special** (:data:`NORMAL`, :data:`SPECIAL`): one answer per entry,
  judged by ACEBench's checker functions from the checkout (normal; trusted code) and by
  ACEBench's special-category rules (:mod:`.acebench_score`).

``replay:reference`` plays each entry's reference (:mod:`.acebench_reference`): the
harness check, which must score 100 % by ACEBench's evaluation.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_envs.errors import SpadeError

from .acebench_calls import AceCallError, decode_calls, format_message
from .acebench_score import conversation_accuracy, end_to_end, process_accuracy, special_ok
from .acebench_world import AceWorld, ScenarioProgram
from .stats import mean_summary, rate_summary

SUITE_NAME = "acebench-agent"
AGENT = ("agent_multi_step", "agent_multi_turn")
NORMAL = ("normal_single_turn_single_function", "normal_single_turn_parallel_function",
          "normal_multi_turn_user_adjust", "normal_multi_turn_user_switch", "normal_similar_api",
          "normal_preference", "normal_atom_bool", "normal_atom_enum", "normal_atom_number", "normal_atom_list",
          "normal_atom_object_deep", "normal_atom_object_short")
SPECIAL = ("special_incomplete", "special_error_param", "special_irrelevant")
CATEGORIES = AGENT + NORMAL + SPECIAL
FINISH = "finish conversation"
_CALL_MESSAGE = re.compile(r"\[.*?\]")

AGENT_PROMPT = (
    "You operate apps for a user by calling their APIs. To call APIs, reply with ONLY a bracketed list of calls "
    "in this form: [ApiName(key1='value1', key2=2)] (several calls: separated by commas inside the brackets). "
    "Use only the parameters the user gave or the API requires. Call one API at a time when a step depends on "
    "the previous result; each execution result comes back to you. When the task is done, reply exactly: "
    f"{FINISH}\n\nAPIs (JSON):\n{{functions}}")
USER_PROMPT = (
    "You play a user talking to an assistant that can operate apps. Your instruction: {question}\n"
    "Write one short line at a time and give only the information needed for the current step; never invent "
    f"facts the instruction does not give. When every task of the instruction is done, reply exactly: {FINISH}")
SINGLE_PROMPT = (
    "Answer the user's request by calling the APIs below. Reply with ONLY a bracketed list of calls: "
    "[ApiName(key1='value1', key2='value2')]. If the request lacks a required parameter, reply "
    "'Missing necessary parameters (names) for the api (ApiName)'. If a value in the request is wrong, reply "
    "'There is incorrect value (value) for the parameters (name) in the conversation history.' If no API can "
    "serve the request, reply 'Due to the limitations of the function, I cannot solve this problem.'"
    "{profile}\n\nAPIs (JSON):\n{functions}")


@dataclass
class AceEntry:
    id: str
    category: str
    question: str
    functions: list[dict[str, Any]]
    ground_truth: Any
    milestones: list[Any] = field(default_factory=list)
    initial_config: dict[str, Any] = field(default_factory=dict)
    involved_classes: list[str] = field(default_factory=list)
    profile: str = ""


def find_data_dir(root: str | Path, language: str = "en") -> Path:
    root = Path(root)
    for cand in (root / "data_all" / f"data_{language}", root / "data" / language, root):
        if (cand / "possible_answer").is_dir():
            return cand
    raise SpadeError(f"{root} does not look like an ACEBench checkout (no data_all/data_{language}/possible_answer)")


def _rows(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8").strip()
        if text.startswith("["):
            return json.loads(text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise SpadeError(f"ACEBench data file {path} is not JSON lines: {exc}") from None


def load_acebench(root: str | Path | None = None, categories: Sequence[str] | None = None, *,
                  language: str = "en", limit: int | None = None) -> list[AceEntry]:
    """Entries of the given categories (default: the agent categories) of a checkout."""
    root = root or os.environ.get("ACEBENCH_ROOT")
    if not root:
        raise SpadeError("the ACEBench suites need an ACEBench checkout: pass --data DIR or set ACEBENCH_ROOT")
    base = find_data_dir(root, language)
    out: list[AceEntry] = []
    for cat in categories or AGENT:
        if cat not in CATEGORIES:
            raise SpadeError(f"unknown ACEBench category '{cat}'; choose from: {', '.join(CATEGORIES)}")
        name = f"data_{cat}.json"
        if not (base / name).exists():
            continue
        answers = {a["id"]: a for a in _rows(base / "possible_answer" / name)}
        for p in _rows(base / name):
            a = answers.get(p.get("id"))
            if a is None:
                raise SpadeError(f"ACEBench data: no possible answer for {p.get('id')}")
            out.append(AceEntry(str(p["id"]), cat, str(p.get("question", "")), list(p.get("function", [])),
                                a.get("ground_truth"), list(a.get("mile_stone", []) or []),
                                p.get("initial_config", {}) or {}, list(p.get("involved_classes", [])),
                                str(p.get("profile", "") or "")))
    if not out:
        raise SpadeError(f"no ACEBench data for {', '.join(categories or AGENT)} under {base}")
    return out[:limit] if limit is not None else out


class ScriptedUser:
    """The deterministic user of the reference replay: states the instruction, then ends."""

    def __init__(self, entry: AceEntry) -> None:
        self.turns = 0
        self.entry = entry

    def say(self, agent_message: str | None) -> str:
        self.turns += 1
        return self.entry.question if self.turns == 1 else FINISH


class ModelUser:
    """A simulated user played by a chat backend (ACEBench uses an LLM user, too)."""

    def __init__(self, backend: Any, entry: AceEntry, max_new_tokens: int = 96) -> None:
        self.backend, self.max_new_tokens = backend, max_new_tokens
        self.messages = [{"role": "system", "content": USER_PROMPT.format(question=entry.question)},
                         {"role": "user", "content": "Hello, how can I help you?"}]

    def say(self, agent_message: str | None) -> str:
        if agent_message is not None:
            self.messages.append({"role": "user", "content": agent_message})
        reply = _text(self.backend.chat([self.messages], max_new_tokens=self.max_new_tokens, temperature=0.0)[0])
        self.messages.append({"role": "assistant", "content": reply})
        return reply.strip() or FINISH


def _text(gen: Any) -> str:
    text = getattr(gen, "text", gen)
    return text if isinstance(text, str) else str(text)


def as_acebench_message(text: str) -> str:
    """An agent reply in ACEBench's syntax: ``<tool_call>`` JSON blocks become a call list."""
    from spade_envs.actions import parse_tool_calls

    try:
        calls = [c for c in parse_tool_calls(text) if getattr(c, "error", None) is None]
    except Exception:  # parsing must not end the episode
        calls = []
    if calls:
        return format_message([(c.name, dict(c.arguments or {})) for c in calls])
    return text.strip()


@dataclass
class AceEpisode:
    """What one entry produced: ACEBench's records plus the transcript."""

    result: list[dict[str, Any]] = field(default_factory=list)
    process: list[str] = field(default_factory=list)
    answer: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


class AgentPolicy:
    """The agent side: ``reply(messages) -> text`` (a model backend or a scripted list)."""

    def __init__(self, backend: Any = None, script: Sequence[str] | None = None, max_new_tokens: int = 256) -> None:
        self.backend, self.script, self.max_new_tokens = backend, list(script or []), max_new_tokens

    def reply(self, messages: list[dict[str, Any]]) -> str:
        if self.backend is None:
            return self.script.pop(0) if self.script else FINISH
        return as_acebench_message(_text(self.backend.chat([messages], max_new_tokens=self.max_new_tokens,
                                                           temperature=0.0)[0]))


def play_agent_entry(entry: AceEntry, world: AceWorld, agent: AgentPolicy, user: Any = None, *,
                     max_messages: int = 40) -> AceEpisode:
    """One agent-category episode, with ACEBench's routing of messages."""
    ep = AceEpisode()
    system = AGENT_PROMPT.format(functions=json.dumps(entry.functions, ensure_ascii=False))
    ep.messages.append({"role": "system", "content": system})
    multi_turn = entry.category == "agent_multi_turn"
    first = user.say(None) if multi_turn else entry.question
    ep.messages.append({"role": "user", "content": first})
    for _ in range(max_messages):
        text = agent.reply(ep.messages)
        ep.messages.append({"role": "assistant", "content": text})
        if FINISH in text:
            break
        if multi_turn and not _CALL_MESSAGE.match(text):
            said = user.say(text)
            ep.messages.append({"role": "user", "content": said})
            if FINISH in said:
                break
            continue
        ep.process.append(text)
        observation = world.execute(text)
        ep.messages.append({"role": "user", "content": f"execution result: {observation}"})
    ep.result = world.result()
    return ep


def play_single_entry(entry: AceEntry, agent: AgentPolicy) -> AceEpisode:
    profile = f"\nUser profile: {entry.profile}" if entry.profile else ""
    system = SINGLE_PROMPT.format(profile=profile, functions=json.dumps(entry.functions, ensure_ascii=False))
    ep = AceEpisode(messages=[{"role": "system", "content": system}, {"role": "user", "content": entry.question}])
    ep.answer = agent.reply(ep.messages)
    ep.messages.append({"role": "assistant", "content": ep.answer})
    return ep


def score_entry(entry: AceEntry, ep: AceEpisode, normal_check: Callable[..., tuple[bool, str]] | None = None
                ) -> dict[str, Any]:
    """The ``--json`` entry: verdicts plus ACEBench's ``result``/``process`` records."""
    row: dict[str, Any] = {"id": entry.id, "category": entry.category}
    if ep.error:
        row.update(passed=False, why=ep.error)
    elif entry.category in AGENT:
        ok, errors = end_to_end(ep.result, entry.ground_truth)
        row.update(passed=ok, end_to_end_ok=ok, process_acc=process_accuracy(entry.milestones, ep.process, ok),
                   n_calls=sum(len(_safe_decode(m)) for m in ep.process), why="; ".join(errors)[:500])
    elif entry.category in SPECIAL:
        ok, why = special_ok(entry.category, ep.answer, entry.ground_truth)
        row.update(passed=ok, why=why)
    else:
        if normal_check is None:
            raise SpadeError("the normal categories need ACEBench's checker: pass --trust-remote-code")
        ok, why = normal_check(entry.category, entry.functions, entry.question, ep.answer, entry.ground_truth)
        row.update(passed=ok, why=why)
    row.update(result=ep.result if entry.category in AGENT else ep.answer, process=ep.process,
               transcript=ep.messages)
    return row


def _safe_decode(message: str) -> list:
    try:
        return decode_calls(message)
    except AceCallError:
        return []


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    cats = list(dict.fromkeys(r["category"] for r in rows))
    agent_rows = [r for r in rows if r["category"] in AGENT]
    summary: dict[str, Any] = {"overall": rate_summary(r["passed"] for r in rows),
                               "per_category": {c: rate_summary(r["passed"] for r in rows if r["category"] == c)
                                                for c in cats}}
    summary["accuracy_per_category"] = {
        c: (conversation_accuracy([r for r in rows if r["category"] == c]) if "normal_multi_turn" in c
            else round(sum(r["passed"] for r in rows if r["category"] == c) / sum(r["category"] == c for r in rows), 3))
        for c in cats}
    if agent_rows:
        summary["end_state_acc"] = rate_summary(r["end_to_end_ok"] for r in agent_rows if "end_to_end_ok" in r)["rate"]
        summary["process_acc"] = round(mean_summary(r.get("process_acc", 0.0) for r in agent_rows)["mean"], 3)
        summary["process_acc_per_category"] = {
            c: round(mean_summary(r.get("process_acc", 0.0) for r in agent_rows if r["category"] == c)["mean"], 3)
            for c in cats if c in AGENT}
    return summary


def run_acebench(root: str | Path, entries: Sequence[AceEntry], *, backend: Any = None, user_backend: Any = None,
                 trust_remote_code: bool = False, runtime: Any = None, progress: Callable[[int], None] | None = None,
                 max_new_tokens: int = 256) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Score ``backend`` (None: the reference replay) on ``entries``."""
    from spade_envs.trust import get_runtime

    from .acebench_reference import reference_messages
    from .acebench_score import official_normal_checker

    runtime = runtime or get_runtime(trust_remote_code=trust_remote_code)
    programs: dict[str, ScenarioProgram] = {}
    normal_check = None
    if any(e.category in NORMAL for e in entries):
        normal_check = official_normal_checker(root, trust_remote_code=trust_remote_code)
    rows = []
    for entry in entries:
        if entry.category in AGENT:
            program = programs.get(entry.category) or programs.setdefault(entry.category,
                                                                           ScenarioProgram(root, entry.category))
            script = None if backend is not None else reference_messages(entry, program, runtime)
            agent = AgentPolicy(backend, script, max_new_tokens)
            user = (ScriptedUser(entry) if backend is None or user_backend == "scripted"
                    else ModelUser(user_backend or backend, entry))
            world = None
            try:
                world = AceWorld(program, entry.involved_classes, entry.initial_config, runtime)
                ep = play_agent_entry(entry, world, agent, user)
            except SpadeError as exc:
                ep = AceEpisode(error=f"{type(exc).__name__}: {exc}"[:500])
            finally:
                if world is not None:
                    world.close()
        else:
            from .acebench_reference import reference_answer

            agent = AgentPolicy(backend, None if backend is not None else [reference_answer(entry)], max_new_tokens)
            ep = play_single_entry(entry, agent)
        rows.append(score_entry(entry, ep, normal_check))
        if progress:
            progress(1)
    return rows, summarize(rows)


def write_acebench_layout(rows: Sequence[dict[str, Any]], folder: str | Path, model_name: str = "spade") -> Path:
    """Write the run as ACEBench's own result files (``result_all/result_en/<model>/
    data_<category>_result.json``: ``id``, ``result`` and, for agent entries, ``process``),
    so that ACEBench's ``eval_main.py`` can score it unchanged."""
    out = Path(folder) / "result_all" / "result_en" / model_name
    out.mkdir(parents=True, exist_ok=True)
    for cat in dict.fromkeys(r["category"] for r in rows):
        lines = []
        for r in rows:
            if r["category"] == cat:
                record = {"id": r["id"], "result": r.get("result")}
                if cat in AGENT:
                    record["process"] = r.get("process", [])
                lines.append(json.dumps(record, ensure_ascii=False))
        (out / f"data_{cat}_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out.parent.parent
