"""The reference trajectory of each ACEBench entry: what ``replay:reference`` plays.

Agent categories: ACEBench gives *milestones* (key calls, sometimes several alternative
lists), not a full executable path, and some of its milestone strings do not execute as
written (an apostrophe inside a quoted value, a trailing space after the closing
bracket, a product name shortened). The reference is the first of these that reproduces
the ground truth when executed (checked here, by ACEBench's end-to-end rule):

1. each alternative milestone list, in order, every message stripped and its stray quotes escaped
   (:func:`~.acebench_calls.repair_quotes`);
2. else a corrected call list from ``data/acebench_reference_<language>.json`` (entries whose
   milestones cannot reach the ground truth; each correction is a list of messages, and
   ``tests/test_evals_acebench_real.py`` checks every one against ACEBench's own
   ``agent_eval``).

Normal and special categories: the ground truth written as an answer (calls in
ACEBench's syntax; for special categories a sentence with the marker phrase and the
names or values the ground truth lists).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from .acebench_calls import format_message, repair_quotes
from .acebench_score import end_to_end
from .acebench_world import AceWorld, ScenarioProgram

_DATA = Path(__file__).with_name("data")


@lru_cache(maxsize=4)
def corrections(language: str = "en") -> dict[str, list[str]]:
    path = _DATA / f"acebench_reference_{language}.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return {k: v for k, v in data.items() if not k.startswith("_")}


def _alternatives(entry: Any) -> list[list[str]]:
    stones = entry.milestones
    alts = stones if stones and isinstance(stones[0], list) else [stones]
    return [[repair_quotes(str(m).strip()) for m in alt] for alt in alts]


def _reaches_truth(entry: Any, messages: list[str], program: ScenarioProgram, runtime: Any) -> bool:
    world = AceWorld(program, entry.involved_classes, entry.initial_config, runtime)
    try:
        for m in messages:
            world.execute(m)
        return end_to_end(world.result(), entry.ground_truth)[0]
    finally:
        world.close()


def reference_messages(entry: Any, program: ScenarioProgram, runtime: Any, language: str = "en") -> list[str]:
    """The agent messages of the reference replay of an agent-category entry."""
    alts = _alternatives(entry)
    fixed = corrections(language).get(entry.id)
    for candidate in alts + ([list(fixed)] if fixed else []):
        if _reaches_truth(entry, candidate, program, runtime):
            return candidate
    return alts[0]


def reference_answer(entry: Any) -> str:
    """The reference answer of a normal or special entry."""
    truth = entry.ground_truth
    if entry.category.startswith("special_"):
        if "irrelevant" in entry.category:
            return truth if isinstance(truth, str) else "Due to the limitations of the function, I cannot solve this problem."
        names = ", ".join(str(n) for n in truth)
        listed = ", ".join(str(v) for values in truth.values() for v in values)
        if "incomplete" in entry.category:
            return f"Missing necessary parameters ({listed}) for the api ({names})"
        return f"There is incorrect value ({listed}) for the parameters ({names}) in the conversation history."
    first = truth[0] if isinstance(truth, list) else truth
    # ACEBench numbers repeated calls of one function "name_1", "name_2" in its answers
    return format_message([(re.sub(r"_\d+$", "", name), dict(args)) for name, args in first.items()])
