"""Perturbed ground-truth trajectories for checking our BFCL scorer against BFCL's.

Three kinds, each deterministic in ``seed``: ``drop`` (one ground-truth call removed),
``change_arg`` (one argument of one call changed), ``extra`` (a state-changing call
appended to the last non-empty turn). Each returns turns in the scorer's shape (per
turn, a list of steps, each a list of call strings), or None when the entry has no
place for that perturbation.
"""

from __future__ import annotations

import random
from typing import Any

from .bfcl import BFCLEntry
from .bfcl_exec import format_call, parse_call

KINDS = ("drop", "change_arg", "extra")

#: one call per stateful class that changes its public state in most scenarios
EXTRA_CALLS = {
    "GorillaFileSystem": "mkdir(dir_name='spade_extra_dir')",
    "MessageAPI": "add_contact(user_name='spade_extra_user')",
    "TwitterAPI": "post_tweet(content='spade extra tweet')",
    "TicketAPI": "create_ticket(title='spade extra ticket')",
    "TradingBot": "add_to_watchlist(stock='SPDE')",
    "TravelAPI": "register_credit_card(access_token='spade', card_number='4111111111111111', expiration_date='12/2030', cardholder_name='Spade Extra', card_verification_number=123)",
    "VehicleControlAPI": "fillFuelTank(fuelAmount=1.0)",
}


def reference_turns(entry: BFCLEntry) -> list[list[list[str]]]:
    """The ground truth as a trajectory: one step per non-empty turn."""
    return [[list(gt)] if gt else [] for gt in entry.ground_truth]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return value + "_x" if value else "x"
    if isinstance(value, list):
        return value + (value[:1] if value else ["x"])
    if isinstance(value, tuple):
        return value + ("x",)
    if isinstance(value, dict):
        return {**value, "spade_extra": 1}
    return "x"


def perturb(entry: BFCLEntry, kind: str, seed: int = 0) -> list[list[list[str]]] | None:
    """A perturbed copy of the reference trajectory (see module docstring)."""
    rng = random.Random(f"{entry.id}:{kind}:{seed}")
    gt = [list(t) for t in entry.ground_truth]
    nonempty = [i for i, t in enumerate(gt) if t]
    if not nonempty:
        return None
    if kind == "drop":
        t = rng.choice(nonempty)
        del gt[t][rng.randrange(len(gt[t]))]
    elif kind == "change_arg":
        candidates = []
        for t in nonempty:
            for c, call in enumerate(gt[t]):
                parsed = parse_call(call)
                if parsed.args or parsed.kwargs:
                    candidates.append((t, c, parsed))
        if not candidates:
            return None
        t, c, parsed = rng.choice(candidates)
        args, kwargs = list(parsed.args), dict(parsed.kwargs)
        slots = [("a", i) for i in range(len(args))] + [("k", k) for k in kwargs]
        where, key = rng.choice(slots)
        if where == "a":
            args[key] = _changed(args[key])
        else:
            kwargs[key] = _changed(kwargs[key])
        gt[t][c] = format_call(parsed.name, kwargs, args)
    elif kind == "extra":
        extra = next((EXTRA_CALLS[c] for c in entry.involved_classes if c in EXTRA_CALLS), None)
        if extra is None:
            return None
        gt[nonempty[-1]].append(extra)
    else:
        raise ValueError(f"unknown perturbation '{kind}'; choose one of {KINDS}")
    return [[t] if t else [] for t in gt]
