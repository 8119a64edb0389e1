"""Verdicts of the ACEBench suites, defined as ACEBench's own evaluation defines them.

Agent categories (``agent_multi_step``, ``agent_multi_turn``), from ACEBench's
``agent_eval`` and ``agent_eval_process``:

- **end-to-end**: the ``result`` record must hold as many classes as the ground truth;
  for each ground-truth class the first result class with the same key is compared by
  ACEBench's ``agent_checker`` (every attribute the result reports must be in the ground
  truth and equal; a dict attribute is compared key by key over the ground truth's
  keys). A ground-truth class with no match is judged by the previous comparison, as in
  ACEBench (whose loop keeps the last checker result).
- **process accuracy**: 1.0 for an end-to-end correct entry; otherwise, per alternative
  milestone list, the milestones found in order among the ``process`` strings (each
  compared after ``strip()``; a milestone not found consumes the rest), over the list's
  length, rounded to 3 places; the best alternative counts.

Special categories, from ACEBench's ``special_eval``: the answer text must contain the
category's marker phrase and the names/values the ground truth lists. Normal categories
use ACEBench's checker functions from the checkout (:func:`official_normal_checker`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spade_envs.errors import UntrustedCodeError

INCOMPLETE_MARK = "Missing necessary parameters"
ERROR_PARAM_MARK = "There is incorrect value"
IRRELEVANT_MARK = "the limitations of the function"


def _class_ok(model_item: dict[str, Any], truth_item: dict[str, Any]) -> tuple[bool, list[str]]:
    (name, expected), = truth_item.items()
    got = next(iter(model_item.values()))
    errors: list[str] = []
    if not isinstance(got, dict) or not isinstance(expected, dict):
        return got == expected, ([] if got == expected else [f"{name}: wrong shape"])
    for attr, value in got.items():
        if attr not in expected:
            errors.append(f"{name}.{attr} is not in the ground truth")
            continue
        want = expected[attr]
        if isinstance(want, dict):
            for key, v in want.items():
                if not isinstance(value, (dict, list, str)) or key not in value:
                    errors.append(f"{name}.{attr}: missing {key!r}")
                elif isinstance(value, dict) and value[key] != v:
                    errors.append(f"{name}.{attr}.{key}: expected {v!r}, got {value[key]!r}")
                elif not isinstance(value, dict):
                    errors.append(f"{name}.{attr}: expected a mapping")
        elif want != value:
            errors.append(f"{name}.{attr}: expected {want!r}, got {value!r}")
    return not errors, errors


def end_to_end(result: Sequence[dict[str, Any]], ground_truth: Sequence[dict[str, Any]] | dict[str, Any]
               ) -> tuple[bool, list[str]]:
    """ACEBench's end-to-end verdict on a ``result`` record, with the reasons it failed."""
    truth = list(ground_truth) if isinstance(ground_truth, list) else [ground_truth]
    if len(truth) != len(result):
        return False, [f"wrong number of classes: expected {len(truth)}, got {len(result)}"]
    last_ok, last_errors = True, []
    ok, errors = True, []
    for item in truth:
        keys = set(item)
        match = next((m for m in result if isinstance(m, dict) and set(m) == keys), None)
        if match is not None:
            last_ok, last_errors = _class_ok(match, item)
        if not last_ok:
            ok = False
            errors.extend(e for e in last_errors if e not in errors)
    return ok, errors


def _scan(stones: Sequence[str], process: Sequence[str]) -> float:
    if not stones:
        return 1.0
    i, found = 0, 0
    for stone in stones:
        while i < len(process):
            i += 1
            if str(process[i - 1]).strip() == str(stone).strip():
                found += 1
                break
    return round(found / len(stones), 3)


def process_accuracy(milestones: Sequence[Any], process: Sequence[str], end_ok: bool) -> float:
    """ACEBench's process accuracy of one entry."""
    if end_ok:
        return 1.0
    if milestones and isinstance(milestones[0], list):
        return max(_scan(alt, process) for alt in milestones)
    return _scan(list(milestones), process)


def special_ok(category: str, answer: str, ground_truth: Any) -> tuple[bool, str]:
    """ACEBench's verdict on a special-category answer, with the reason it failed."""
    text = answer if isinstance(answer, str) else str(answer)
    if "incomplete" in category:
        for name, values in ground_truth.items():
            if INCOMPLETE_MARK not in text:
                return False, "did not say that necessary parameters are missing"
            if name not in text:
                return False, f"did not name the function {name}"
            missing = [v for v in values if v not in text]
            if missing:
                return False, f"did not name the missing parameter(s) {missing}"
        return True, ""
    if "error" in category:
        for name, values in ground_truth.items():
            if ERROR_PARAM_MARK not in text:
                return False, "did not say that a value is incorrect"
            missing = [v for v in values if v not in text]
            if missing:
                return False, f"did not name the incorrect value(s) {missing}"
        return True, ""
    if IRRELEVANT_MARK not in text:
        return False, "did not say the functions cannot solve the request"
    return True, ""


def conversation_accuracy(rows: Sequence[dict[str, Any]]) -> float:
    """ACEBench's accuracy of a ``normal_multi_turn_*`` category: entries ``..._<turn>_<item>``
    in a row with the same turn form one conversation, which counts only if every entry
    in it passed; the mean over conversations, rounded to 3 places."""
    groups: list[list[bool]] = []
    last = None
    for row in rows:
        turn = str(row["id"]).split("_")[-2]
        if groups and turn == last:
            groups[-1].append(bool(row["passed"]))
        else:
            groups.append([bool(row["passed"])])
        last = turn
    return round(sum(all(g) for g in groups) / len(groups), 3) if groups else 0.0


def import_checkout(root: str | Path, *, trust_remote_code: bool) -> Callable[[str], Any]:
    """An importer of ACEBench's own modules from the checkout (in-process: trusted only)."""
    if not trust_remote_code:
        raise UntrustedCodeError("scoring the normal categories runs ACEBench's checker code from the checkout "
                                 "in-process; pass --trust-remote-code (Python: trust_remote_code=True)")
    root = str(Path(root).resolve())

    def load(name: str) -> Any:
        if root not in sys.path:
            sys.path.insert(0, root)
        return importlib.import_module(name)

    return load


def official_normal_checker(root: str | Path, *, trust_remote_code: bool) -> Callable[..., tuple[bool, str]]:
    """``check(category, functions, question, answer_text, possible_answers) -> (ok, why)``
    with ACEBench's ``decode_ast``, ``is_function_call_format_valid`` and ``normal_checker``."""
    load = import_checkout(root, trust_remote_code=trust_remote_code)
    checker, utils, decoder = load("model_eval.checker"), load("model_eval.utils"), load("model_inference.utils")

    def check(category: str, functions: list, question: str, answer: str, possible: Any) -> tuple[bool, str]:
        raw = "".join(str(answer).split())
        try:
            decoded = decoder.decode_ast("spade", raw)
        except Exception as exc:  # ACEBench: "Invalid syntax. Failed to decode AST."
            return False, f"wrong output format: {exc}"[:300]
        if not utils.is_function_call_format_valid(decoded):
            return False, "wrong output format"
        why = ""
        for candidate in possible if isinstance(possible, list) else [possible]:
            try:
                verdict = checker.normal_checker(functions, decoded, candidate, question, category)
            except Exception as exc:
                return False, f"ACEBench's checker raised {type(exc).__name__}: {exc}"[:300]
            if verdict.get("valid"):
                return True, ""
            why = why or "; ".join(str(e) for e in verdict.get("error", []))[:300]
        return False, why

    return check
