"""BFCL-v4 multi-turn suite: data, tools, and the run/score loop.

Data come from the ``bfcl-eval`` package (``pip install --no-deps bfcl-eval mpmath``):
``BFCL_v4_multi_turn_{base,miss_func,miss_param,long_context}.json``, their
``possible_answer/`` ground truth and the ``multi_turn_func_doc/`` function docs. Each
entry is a list of user turns over a set of BFCL environment classes (file system,
messaging, trading...). BFCL's rules, as its own inference loop applies them:

- turn structure: each user turn opens with its user message; the agent may take up to
  20 steps (:data:`MAX_STEPS_PER_TURN`) of calls; a step with no call ends the turn; an
  agent that exceeds the limit is force-stopped and the entry fails;
- ``miss_func``: the withheld functions are absent from the tool list until their turn,
  which has no user message of its own and gets BFCL's "I have updated some more
  functions" prompt;
- BFCL function docs (``type: dict/float/tuple``) become JSON Schema tools.

Scoring is ours (:mod:`.bfcl_exec`); with ``agreement=True`` each verdict is also
checked against BFCL's own ``multi_turn_checker`` (:mod:`.bfcl_official`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from spade_envs.errors import SpadeError

from .bfcl_exec import BFCLUnavailableError, CallParseError, BFCLWorld, parse_call, score_entry
from .stats import rate_summary

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
SUITE_NAME = "bfcl-v4-multi-turn"
MAX_STEPS_PER_TURN = 20
REVEAL_PROMPT = "I have updated some more functions you can choose from. What about now?"
FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
_TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "any": None}


@dataclass
class BFCLEntry:
    """One multi-turn entry with its ground truth (``raw`` is BFCL's entry unchanged)."""

    id: str
    category: str
    questions: list[list[dict[str, Any]]]
    involved_classes: list[str]
    ground_truth: list[list[str]]
    missed_function: dict[int, list[str]] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def n_turns(self) -> int:
        return len(self.ground_truth)


def data_dir() -> Path:
    """The ``data`` folder of the installed bfcl-eval package."""
    try:
        import bfcl_eval
    except ImportError:
        raise BFCLUnavailableError("the BFCL suite needs `pip install --no-deps bfcl-eval mpmath`") from None
    return Path(bfcl_eval.__file__).parent / "data"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@lru_cache(maxsize=8)
def _load_category_cached(category: str) -> tuple[BFCLEntry, ...]:
    base = data_dir()
    name = f"BFCL_v4_multi_turn_{category}.json"
    prompts = _read_jsonl(base / name)
    answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(base / "possible_answer" / name)}
    out = []
    for p in prompts:
        if p["id"] not in answers:
            raise SpadeError(f"BFCL data: no ground truth for {p['id']}")
        out.append(
            BFCLEntry(
                id=p["id"], category=category, questions=p["question"], involved_classes=list(p["involved_classes"]),
                ground_truth=answers[p["id"]],
                missed_function={int(k): list(v) for k, v in p.get("missed_function", {}).items()},
                raw=p,
            )
        )
    return tuple(out)


def load_category(category: str) -> list[BFCLEntry]:
    """Every entry of one category (``base``, ``miss_func``, ``miss_param``, ``long_context``)."""
    category = category.removeprefix("multi_turn_")
    if category not in CATEGORIES:
        raise SpadeError(f"unknown BFCL multi-turn category '{category}'; choose one of: {', '.join(CATEGORIES)}")
    return [copy.deepcopy(e) for e in _load_category_cached(category)]


def load_entries(categories: Sequence[str] | None = None, limit: int | None = None) -> list[BFCLEntry]:
    """Entries of ``categories`` (all four by default). With ``limit``, the first ``limit``
    entries taken round-robin across the categories (deterministic)."""
    per = [load_category(c) for c in (categories or CATEGORIES)]
    if limit is None:
        return [e for entries in per for e in entries]
    out: list[BFCLEntry] = []
    for i in range(max((len(p) for p in per), default=0)):
        for entries in per:
            if i < len(entries) and len(out) < limit:
                out.append(entries[i])
    return out


def _convert_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_convert_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            mapped = _TYPE_MAP.get(value, value)
            if mapped is not None:
                out["type"] = mapped
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {k: _convert_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf"):
            out[key] = _convert_schema(value)
        else:
            out[key] = value
    return out


def doc_to_tool(doc: dict[str, Any]) -> dict[str, Any]:
    """A BFCL function doc as an OpenAI function tool whose parameters are JSON Schema."""
    params = _convert_schema(doc.get("parameters") or {"type": "dict", "properties": {}})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return {"type": "function", "function": {"name": doc["name"], "description": doc.get("description", ""),
                                             "parameters": params}}


@lru_cache(maxsize=16)
def _class_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    if class_name not in FUNC_DOC_FILES:
        raise SpadeError(f"no BFCL function docs for class '{class_name}'")
    return tuple(_read_jsonl(data_dir() / "multi_turn_func_doc" / FUNC_DOC_FILES[class_name]))


def function_docs(entry: BFCLEntry, turn: int) -> list[dict[str, Any]]:
    """BFCL function docs available at ``turn`` (withheld ``miss_func`` functions appear
    from their turn on, appended at the end as BFCL does)."""
    withheld = {name: t for t, names in entry.missed_function.items() for name in names}
    docs, revealed = [], []
    for cls in entry.involved_classes:
        for doc in _class_docs(cls):
            t = withheld.get(doc["name"])
            if t is None:
                docs.append(doc)
            elif t <= turn:
                revealed.append((t, doc))
    return docs + [d for _, d in sorted(revealed, key=lambda x: x[0])]


def tools_for_turn(entry: BFCLEntry, turn: int) -> list[dict[str, Any]]:
    return [doc_to_tool(d) for d in function_docs(entry, turn)]


def user_messages(entry: BFCLEntry, turn: int) -> list[dict[str, Any]]:
    """The messages that open ``turn`` (BFCL's reveal prompt on a withheld-function turn)."""
    if turn in entry.missed_function and not entry.questions[turn]:
        return [{"role": "user", "content": REVEAL_PROMPT}]
    return [dict(m) for m in entry.questions[turn]]


def safe_for_official(entry: BFCLEntry, turns: Sequence[Sequence[Sequence[str]]]) -> bool:
    """True when every call is a plain literal call of a method of the entry's classes,
    so BFCL's ``eval``-based checker can be run on it without risk."""
    methods = set(BFCLWorld(entry.raw).methods)
    for turn in turns:
        for step in turn:
            for call in step:
                try:
                    if parse_call(call).name not in methods:
                        return False
                except CallParseError:
                    return False
    return True


def score_trajectory(entry: BFCLEntry, turns: Sequence[Sequence[Sequence[str]]], *, agreement: bool = False,
                     strict_irrelevance: bool = False) -> dict[str, Any]:
    """The result row of one entry: our verdict, and BFCL's when ``agreement`` is set."""
    verdict = score_entry(entry.raw, entry.ground_truth, turns, strict_irrelevance=strict_irrelevance)
    row = {
        "id": entry.id, "category": entry.category, "passed": verdict["passed"],
        "error_type": verdict["error_type"], "error": verdict["error"][:300], "failed_turn": verdict["failed_turn"],
        "state_ok": verdict["state_ok"], "response_ok": verdict["response_ok"],
        "irrelevance_ok": verdict["irrelevance_ok"], "n_turns": len(turns),
        "n_calls": sum(len(s) for t in turns for s in t),
    }
    if agreement and safe_for_official(entry, turns):
        from .bfcl_official import official_verdict

        official = official_verdict(entry.raw, entry.ground_truth, turns)
        row["bfcl_passed"] = official["valid"]
        row["bfcl_error_type"] = official["error_type"]
        row["agree"] = official["valid"] == verdict["passed"]
        row["irrelevance_agree"] = official["irrelevance_valid"] == verdict["irrelevance_ok"]
    return row


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall and per-category pass rates with Wilson CIs, plus agreement figures."""
    summary: dict[str, Any] = {"overall": rate_summary(r["passed"] for r in rows), "per_category": {}}
    for cat in dict.fromkeys(r["category"] for r in rows):
        summary["per_category"][cat] = rate_summary(r["passed"] for r in rows if r["category"] == cat)
    checked = [r for r in rows if "agree" in r]
    if checked:
        summary["agreement"] = {
            "n": len(checked),
            "agree": sum(r["agree"] for r in checked),
            "disagree_ids": [r["id"] for r in checked if not r["agree"]],
            "irrelevance_agree": sum(r["irrelevance_agree"] for r in checked),
            "bfcl_failed_ids": [r["id"] for r in checked if not r["bfcl_passed"]],
        }
    summary["irrelevance_ok"] = rate_summary(r["irrelevance_ok"] for r in rows)
    return summary


def run_suite(
    agent: "Any",
    entries: Sequence[BFCLEntry],
    *,
    agreement: bool = False,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run a :class:`~.bfcl_agents.BFCLAgent` over ``entries`` and score each trajectory.

    Returns ``(rows, summary)``. ``progress(n)`` is called as entries finish scoring."""
    trajectories = agent.run(list(entries))
    rows = []
    for entry, traj in zip(entries, trajectories):
        row = score_trajectory(entry, traj.turns, agreement=agreement)
        row["force_terminated"] = traj.force_terminated
        if traj.error:
            row["agent_error"] = traj.error
        rows.append(row)
        if progress:
            progress(1)
    return rows, summarize(rows)
