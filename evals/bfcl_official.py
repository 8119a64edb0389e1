"""BFCL's own multi-turn verdict, for the agreement check of our scorer.

Wraps ``bfcl_eval``'s ``multi_turn_checker`` exactly as its eval runner calls it
(force-terminated check, empty steps dropped). BFCL keeps environment instances in
module globals keyed by model name and entry id; every call here uses a fresh model
name and removes its instances afterwards, so verdicts never leak between calls.
Only ever used on trusted call strings (ground truth and its perturbations), because
BFCL's executor runs them with ``eval``.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Sequence
from typing import Any

from .bfcl_exec import BFCLUnavailableError

_COUNTER = itertools.count()


def official_verdict(
    entry: dict[str, Any],
    ground_truth: Sequence[Sequence[str]],
    model_turns: Sequence[Sequence[Sequence[str]]],
) -> dict[str, Any]:
    """``{"valid": bool, "error_type": str | None, "irrelevance_valid": bool}`` from BFCL."""
    try:
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker as mtc
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils as mtu
    except ImportError as exc:
        raise BFCLUnavailableError(f"the BFCL checker needs `pip install --no-deps bfcl-eval mpmath` ({exc})") from None
    decoded = [[list(step) for step in turn if not mtu.is_empty_execute_response(step)] for turn in model_turns]
    gt = [list(t) for t in ground_truth]
    irrelevance = (
        mtc.multi_turn_irrelevance_checker(decoded, gt)["valid"] if len(decoded) == len(gt) else True
    )
    if len(decoded) != len(gt):
        return {"valid": False, "error_type": "multi_turn:force_terminated", "irrelevance_valid": irrelevance}
    model_name = f"spadeagree{next(_COUNTER)}"
    try:
        result = mtc.multi_turn_checker(decoded, gt, copy.deepcopy(entry), entry["id"].rsplit("_", 1)[0], model_name)
    finally:
        prefix = re.sub(r"[-./:]", "_", model_name) + "_"
        for key in [k for k in vars(mtu) if k.startswith(prefix)]:
            del vars(mtu)[key]
    return {"valid": bool(result["valid"]), "error_type": result.get("error_type"), "irrelevance_valid": irrelevance}
