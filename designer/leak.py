r"""Answer-leak detection: does an observation give the answer away?

The secrets of an episode come from its ``solution()`` text:

- a tool-use solution (``<answer>`` blocks): the content of the last ``<answer>``;
- ``\boxed{}`` actions: the content of each action when there are at most
  :data:`MAX_BOXED_ACTIONS` of them; a longer move list is checked as a *sequence*: its
  first :data:`SEQUENCE_MOVES` moves in order, separated by anything but letters and
  digits (the word ``boxed`` aside) (``W, W, S, E`` or ``\boxed{W}\n\boxed{W}...``), since one move such as ``up``
  is no secret but the plan is;
- anything else is a bare answer: the text itself.

**Specificity rule.** Short or generic answers appear in honest observations by chance
(``"3"`` in ``"code mod 7 = 3"``, ``"yes"``), so a single answer is only checked when,
after whitespace is collapsed, it

- holds at least ``min_digits`` digits (default 3: numbers from 100, codes, ids), or
- has no digit and is at least ``min_chars`` characters long (default 4);

move sequences of three or more moves are always checked. Matching is case-insensitive
with word boundaries (``105`` does not match inside ``1105``).

**Vocabulary exception.** A secret that also appears in the reset observation of another
seed whose own solution does not contain it belongs to the task's vocabulary (a listed
option, a fixed word of the prompt), not to this episode's answer, and is not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from spade_envs.actions import extract_answer, extract_boxed, solution_to_actions

#: boxed move lists longer than this are checked as a sequence, not move by move
MAX_BOXED_ACTIONS = 2
#: moves of a sequence secret
SEQUENCE_MOVES = 4


@dataclass(frozen=True)
class Secret:
    """One thing an observation must not reveal: a label and its pattern."""

    label: str
    pattern: re.Pattern[str]


def answer_candidates(solution: str) -> list[str]:
    """The single answer strings of a solution (before the specificity rule)."""
    text = "" if solution is None else str(solution)
    if "<answer>" in text:
        found = extract_answer(text)
        return [found] if found else []
    if "\\boxed{" in text:
        actions = solution_to_actions(text)
        if len(actions) > MAX_BOXED_ACTIONS:
            return []
        return [b for b in (extract_boxed(a) for a in actions) if b]
    stripped = text.strip()
    return [stripped] if stripped else []


def is_specific(candidate: str, min_digits: int = 3, min_chars: int = 4) -> bool:
    """True when ``candidate`` is specific enough that seeing it in an observation is a leak."""
    text = " ".join(candidate.split())
    digits = sum(ch.isdigit() for ch in text)
    if digits:
        return digits >= min_digits
    return len(text) >= min_chars


def _literal(candidate: str) -> str:
    text = " ".join(candidate.split())
    body = re.escape(text).replace(r"\ ", r"\s+")
    head = r"(?<![A-Za-z0-9])" if text[:1].isalnum() else ""
    tail = r"(?![A-Za-z0-9])" if text[-1:].isalnum() else ""
    return head + body + tail


def secrets(solution: str, min_digits: int = 3, min_chars: int = 4) -> list[Secret]:
    """The checkable secrets of a solution (see the module docstring)."""
    out = [
        Secret(c, re.compile(_literal(c), re.IGNORECASE))
        for c in answer_candidates(solution)
        if is_specific(c, min_digits, min_chars)
    ]
    text = "" if solution is None else str(solution)
    if "\\boxed{" in text and "<answer>" not in text:
        moves = [extract_boxed(a) for a in solution_to_actions(text)]
        if len(moves) > MAX_BOXED_ACTIONS and all(moves):
            head = moves[:SEQUENCE_MOVES]
            pattern = r"(?:[^A-Za-z0-9]|boxed){1,12}".join(_literal(m) for m in head)  # type: ignore[arg-type]
            out.append(Secret("moves " + ", ".join(head), re.compile(pattern, re.IGNORECASE)))  # type: ignore[arg-type]
    return out


def find_leak(
    solution: str,
    observations: Iterable[str],
    others: Iterable[tuple[str, str]] = (),
    *,
    min_digits: int = 3,
    min_chars: int = 4,
) -> tuple[str, str] | None:
    """The first ``(secret label, observation excerpt)`` where a secret of ``solution``
    appears in one of ``observations``; None when nothing leaks. ``others`` are
    ``(reset observation, solution)`` pairs of other seeds (the vocabulary exception)."""
    observations = list(observations)
    others = list(others)
    for secret in secrets(solution, min_digits, min_chars):
        if any(secret.pattern.search(obs) and not secret.pattern.search(sol) for obs, sol in others):
            continue
        for obs in observations:
            m = secret.pattern.search(obs)
            if m:
                lo, hi = max(0, m.start() - 30), min(len(obs), m.end() + 30)
                return secret.label, obs[lo:hi].replace("\n", " ")
    return None
