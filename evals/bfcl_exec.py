"""Safe execution of BFCL call strings against BFCL's own environment classes, and our
multi-turn scorer (state check, response check, irrelevance rule).

Call strings (``cd(folder='docs')``, ``mean([1, 2.5])``) are parsed with :mod:`ast`;
only a plain function name with literal arguments is accepted (``ast.literal_eval`` on
each argument) and it is dispatched to a public method of one of the entry's involved
class instances. Nothing a model writes is ever passed to ``eval``.

Scoring (:func:`score_entry`) follows BFCL-v4's multi-turn rules, computed by our own
code: after each user turn whose ground truth is non-empty, the model must have made at
least one call in that turn, every public attribute of every involved instance must
equal the ground-truth replay's (state check), and the ground-truth execution results of
that turn must be a sub-multiset of all the model's results so far (response check).
Turns whose ground truth is empty are BFCL's irrelevance turns: the model should make no
call; that rule is reported as ``irrelevance_ok`` (BFCL 2026.3.23's runner does not fold
it into the verdict, so neither does ``passed`` unless ``strict_irrelevance=True``).
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spade_envs.errors import SpadeError

#: BFCL's own module for each environment class (kept here so the eval does not depend
#: on bfcl_eval's constants layout)
BACKEND_PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
CLASS_MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
STATELESS_CLASSES = frozenset({"MathAPI"})
#: names BFCL's executor refuses to run, refused here too (same observation)
BLOCKED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
ERROR_PREFIX = "Error during execution: "


class BFCLUnavailableError(SpadeError):
    """The ``bfcl-eval`` package (or mpmath) is not installed."""


class CallParseError(ValueError):
    """A call string is not ``name(literal args...)``."""


@dataclass(frozen=True)
class ParsedCall:
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def parse_call(text: str) -> ParsedCall:
    """Parse one BFCL call string; raise :class:`CallParseError` unless it is a plain
    ``name(...)`` call whose arguments are all Python literals."""
    try:
        node = ast.parse(str(text).strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CallParseError(f"invalid call syntax: {exc}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise CallParseError("expected a call of the form name(arg=value, ...)")
    try:
        args = tuple(ast.literal_eval(a) for a in node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise CallParseError("**kwargs is not allowed in a call")
            kwargs[kw.arg] = ast.literal_eval(kw.value)
    except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
        raise CallParseError(f"arguments must be literals ({exc})") from None
    return ParsedCall(node.func.id, args, kwargs)


def format_call(name: str, arguments: dict[str, Any] | None = None, args: Sequence[Any] = ()) -> str:
    """The BFCL call string for a call: ``name(pos, key=value)`` with ``repr`` literals."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in (arguments or {}).items()]
    return f"{name}({', '.join(parts)})"


def load_class(class_name: str) -> type:
    """BFCL's environment class ``class_name`` (raises if bfcl-eval is missing)."""
    if class_name not in CLASS_MODULES:
        raise SpadeError(f"unknown BFCL environment class '{class_name}'")
    try:
        module = importlib.import_module(f"{BACKEND_PREFIX}.{CLASS_MODULES[class_name]}")
    except ImportError as exc:
        raise BFCLUnavailableError(
            f"BFCL environments need `pip install --no-deps bfcl-eval mpmath` ({exc})"
        ) from None
    return getattr(module, class_name)


def stringify_result(value: Any) -> str:
    """How BFCL turns a tool's return value into the text the model sees."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


class BFCLWorld:
    """Fresh instances of an entry's involved classes, loaded with its initial config."""

    def __init__(self, entry: dict[str, Any], *, long_context: bool | None = None) -> None:
        if long_context is None:
            long_context = "long_context" in entry["id"] or "composite" in entry["id"]
        config = entry.get("initial_config", {}) or {}
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for class_name in entry["involved_classes"]:
            instance = load_class(class_name)()
            if class_name not in STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(config.get(class_name, {})), long_context=long_context)
            self.instances[class_name] = instance
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.methods[name] = method

    def execute_one(self, call: str) -> str:
        """Run one call string; errors become ``Error during execution: ...`` text."""
        try:
            parsed = parse_call(call)
        except CallParseError as exc:
            return ERROR_PREFIX + str(exc)
        if parsed.name in BLOCKED_NAMES:
            return ERROR_PREFIX + f"Function call {parsed.name} is not allowed."
        method = self.methods.get(parsed.name)
        if method is None:
            return ERROR_PREFIX + f"name '{parsed.name}' is not defined"
        try:
            return stringify_result(method(*parsed.args, **parsed.kwargs))
        except Exception as exc:  # an environment's own error is an observation
            return ERROR_PREFIX + str(exc)

    def execute(self, calls: Sequence[str]) -> list[str]:
        return [self.execute_one(c) for c in calls]


def state_differences(model: BFCLWorld, truth: BFCLWorld) -> dict[str, list[str]]:
    """Per class, the public attributes of the ground truth instance that differ."""
    out: dict[str, list[str]] = {}
    for cls, gt in truth.instances.items():
        mine = model.instances[cls]
        diff = [a for a in vars(gt) if not a.startswith("_") and getattr(mine, a, _MISSING) != getattr(gt, a)]
        if diff:
            out[cls] = diff
    return out


_MISSING = object()


def missing_results(expected: Sequence[str], observed: Sequence[str]) -> list[str]:
    """Items of ``expected`` not covered by ``observed`` as a multiset (empty: sub-multiset)."""
    pool: dict[str, int] = {}
    for item in observed:
        pool[item] = pool.get(item, 0) + 1
    missing = []
    for item in expected:
        if pool.get(item, 0) > 0:
            pool[item] -= 1
        else:
            missing.append(item)
    return missing


def clean_steps(turn: Sequence[Sequence[str]]) -> list[list[str]]:
    """Drop steps with no calls (BFCL ignores empty or undecodable steps)."""
    return [list(step) for step in turn if step]


def score_entry(
    entry: dict[str, Any],
    ground_truth: Sequence[Sequence[str]],
    model_turns: Sequence[Sequence[Sequence[str]]],
    *,
    strict_irrelevance: bool = False,
) -> dict[str, Any]:
    """Score one entry. ``model_turns[t]`` is the list of steps of user turn ``t``, each
    a list of call strings. Returns ``{"passed", "error_type", "error", "failed_turn",
    "irrelevance_ok", "state_ok", "response_ok", "turns"}``; a trajectory with fewer turns
    than the ground truth (the agent was force-stopped) fails as ``force_terminated``."""
    verdict: dict[str, Any] = {
        "passed": False, "error_type": None, "error": "", "failed_turn": None,
        "state_ok": None, "response_ok": None, "irrelevance_ok": True, "turns": [],
    }
    turns = [clean_steps(t) for t in model_turns]
    for i, gt in enumerate(ground_truth):
        if not gt and i < len(turns) and turns[i]:
            verdict["irrelevance_ok"] = False
    if len(turns) != len(ground_truth):
        verdict.update(error_type="multi_turn:force_terminated",
                       error=f"{len(turns)} model turns for {len(ground_truth)} ground-truth turns")
        return verdict
    model, truth = BFCLWorld(entry), BFCLWorld(entry)
    all_results: list[str] = []
    state_ok = response_ok = True
    for i, (gt_calls, steps) in enumerate(zip(ground_truth, turns)):
        for step in steps:
            all_results.extend(model.execute(step))
        gt_results = truth.execute(gt_calls)
        record: dict[str, Any] = {"turn": i, "n_calls": sum(len(s) for s in steps), "n_reference": len(gt_calls)}
        verdict["turns"].append(record)
        if not gt_calls:
            record["irrelevance_ok"] = not steps
            continue
        if not steps:
            verdict.update(error_type="multi_turn:empty_turn_model_response", failed_turn=i,
                           error=f"no call in turn {i}", state_ok=False, response_ok=False)
            return verdict
        diffs = state_differences(model, truth)
        record["state_ok"] = not diffs
        if diffs:
            verdict.update(error_type="multi_turn:instance_state_mismatch", failed_turn=i, state_ok=False,
                           error=f"turn {i}: state differs in {diffs}", response_ok=None)
            return verdict
        missing = missing_results(gt_results, all_results)
        record["response_ok"] = not missing
        if missing:
            verdict.update(error_type="multi_turn:execution_response_mismatch", failed_turn=i, state_ok=state_ok,
                           response_ok=False, error=f"turn {i}: missing results {[m[:80] for m in missing]}")
            return verdict
    verdict.update(passed=True, state_ok=state_ok, response_ok=response_ok)
    if strict_irrelevance and not verdict["irrelevance_ok"]:
        verdict.update(passed=False, error_type="multi_turn:irrelevance_error", error="calls in an irrelevance turn")
    return verdict
