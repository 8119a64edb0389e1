r"""Probes and episode playing for the acceptance pipeline.

- :func:`smoke_actions`: junk actions stepped after every smoke reset (they must not
  crash the program, whatever they are);
- :func:`garbage_probes`: action sequences that must never win an episode: random text,
  empty text, ``\boxed{}`` with the usual guesses, ``<answer>`` junk, malformed tool calls,
  a spray of boxed digits, and the solution's first action repeated;
- :func:`play`: one episode on a session (reset, then the actions in batches), stopped at
  the first step that ends the episode or raises, or at a ``deadline``: the batches grow
  while steps are fast and shrink when they are slow, so a candidate's budget is checked
  between batches of at most a few seconds (200 steps of 1.5 s each stop at the budget,
  not after 5 minutes) and raises :class:`BudgetExceeded`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from spade_envs.actions import extract_answer, extract_boxed
from spade_envs.contract import INFO_NOTE_KEY
from spade_envs.errors import NO_SOLUTION_STAGE, EnvProgramError, FailureKind, SpadeError
from spade_envs.runtime import EnvRuntime, EnvSession

#: The guesses SPADE-style agents (and lazy designers' checkers) try first.
COMMON_GUESSES: tuple[str, ...] = ("0", "1", "yes", "no", "A", "true")


class BudgetExceeded(SpadeError):
    """The candidate's time budget ran out in the middle of a play."""


#: first batch size; batches then hold about CHUNK_SECONDS of steps (at most MAX_CHUNK)
FIRST_CHUNK, MAX_CHUNK, CHUNK_SECONDS = 4, 64, 1.0


@dataclass(frozen=True)
class Probe:
    """A named garbage play: ``actions`` stepped in order from a fresh episode."""

    name: str
    actions: tuple[str, ...]

    def answers(self) -> set[str]:
        """Normalized answer-like contents of the probe (to skip probes that ARE the answer)."""
        out: set[str] = set()
        for action in self.actions:
            for found in (extract_boxed(action), extract_answer(action)):
                if found is not None:
                    out.add(normalize_answer(found))
            if "\\boxed{" in action:
                out.update(normalize_answer(p.split("}", 1)[0]) for p in action.split("\\boxed{")[1:])
        return out


def normalize_answer(text: str) -> str:
    """Case-folded, whitespace-collapsed text; numbers in canonical form (``1.0`` -> ``1``)."""
    text = " ".join(str(text).split()).casefold()
    try:
        value = float(text.replace(",", "").replace("$", ""))
    except ValueError:
        return text
    if value != value or value in (float("inf"), float("-inf")):
        return text
    return str(int(value)) if value == int(value) else repr(value)


def smoke_actions() -> list[str]:
    """Junk stepped after each smoke reset; the program must survive each of them."""
    return [
        "I am not sure what to do here.",
        "",
        "\\boxed{}",
        "<tool_call>{not json</tool_call>",
        "\u2603 \ufffd \u202e" + "x" * 2000,
    ]


def garbage_probes(tools: list[dict[str, Any]], solution_actions: list[str], limit: int = 0) -> list[Probe]:
    """The garbage probes for a program with these tool specs and this solution.

    Every program gets random text, empty text, a spray of ``\\boxed{0}..\\boxed{9}``,
    ``<answer>`` junk and an unknown tool call. Text-only programs also get ``\\boxed{}``
    with each of :data:`COMMON_GUESSES`; tool-use programs get ``\\boxed{0}``, more
    ``<answer>`` guesses, malformed JSON and, for their first two tools, calls without
    arguments and with bogus ones. The repeated-first-action probe is added only when the
    solution has several actions and its last differs from its first (so the repetition
    alone should not win). ``limit`` > 0 keeps the first ``limit`` probes."""
    probes = [
        Probe("random_text", ("The answer is probably something like forty-two, I guess.",)),
        Probe("empty", ("",)),
        Probe("boxed_spray", ("".join(f"\\boxed{{{d}}}" for d in range(10)),)),
        Probe("answer_junk", ("<answer>junk</answer>",)),
        Probe("answer:0", ("<answer>0</answer>",)),
        Probe("tool_unknown", ('<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',)),
    ]
    if not tools:
        probes += [Probe(f"boxed:{g}", (f"\\boxed{{{g}}}",)) for g in COMMON_GUESSES]
        probes.append(Probe("boxed_empty", ("\\boxed{}",)))
    else:
        probes += [
            Probe("boxed:0", ("\\boxed{0}",)),
            Probe("answer_empty", ("<answer></answer>",)),
            Probe("answer:yes", ("<answer>yes</answer>",)),
            Probe("tool_bad_json", ('<tool_call>{"name": "x", "arguments": </tool_call>',)),
        ]
        for spec in tools[:2]:
            name = spec.get("function", {}).get("name", "")
            probes.append(Probe(f"tool_no_args:{name}", (_call(name, {}),)))
            probes.append(Probe(f"tool_bogus_args:{name}", (_call(name, {"__bogus__": [1, {"x": None}]}),)))
    if len(solution_actions) >= 2 and solution_actions[-1] != solution_actions[0]:
        probes.append(Probe("repeat_first_action", (solution_actions[0],) * len(solution_actions)))
    return probes[:limit] if limit > 0 else probes


def _call(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@dataclass
class Episode:
    """What one play produced. ``steps`` holds ``(obs, reward, terminated, truncated)``
    up to the step that ended the episode; ``error`` is the first error, if any."""

    seed: int | None
    obs0: str
    solution: str | None = None
    steps: list[tuple[str, float, bool, bool]] = field(default_factory=list)
    error: SpadeError | None = None
    error_action: str | None = None
    max_call_s: float = 0.0
    no_solution: bool = False
    notes: list[str] = field(default_factory=list)  # contract notes (non-finite floats in info)

    @property
    def ended(self) -> bool:
        return bool(self.steps) and (self.steps[-1][2] or self.steps[-1][3])

    def won(self, win_reward: float = 1.0) -> bool:
        """A win as SPADE scores it: the episode terminated with a reward > 0 (a
        time-shaped 0.64 wins), or its last step reached ``win_reward``."""
        if not self.steps:
            return False
        _obs, reward, terminated, _truncated = self.steps[-1]
        return (terminated and reward > 0) or reward >= win_reward

    @property
    def last_reward(self) -> float:
        return self.steps[-1][1] if self.steps else 0.0

    @property
    def best_reward(self) -> float:
        return max((s[1] for s in self.steps), default=0.0)

    def trace(self) -> list[tuple[str, float, bool, bool]]:
        return list(self.steps)


def play(
    runtime: EnvRuntime,
    session: EnvSession,
    seed: int | None,
    actions: list[str] | tuple[str, ...],
    *,
    want_solution: bool = False,
    deadline: float | None = None,
) -> Episode:
    """Reset ``session`` with ``seed`` and step ``actions`` in batches.

    Errors of ``reset()``/``solution()`` propagate (the caller's stage reports them); an
    error of a step is recorded in the episode. ``solution()`` of a program that has none
    leaves ``episode.solution`` None and sets ``no_solution``. Steps after the one that
    ended the episode are discarded. ``deadline`` (a ``time.perf_counter()`` value):
    :class:`BudgetExceeded` is raised before a batch that would start after it."""
    t0 = time.perf_counter()
    _check(deadline)
    obs0, info0 = session.reset(seed)
    max_call = time.perf_counter() - t0
    episode = Episode(seed=seed, obs0=obs0)
    _note(episode, info0)
    if want_solution:
        t0 = time.perf_counter()
        try:
            episode.solution = session.solution()
        except EnvProgramError as exc:
            if not is_no_solution(exc):
                raise
            episode.no_solution = True
        max_call = max(max_call, time.perf_counter() - t0)
    done, chunk = 0, FIRST_CHUNK
    while done < len(actions):
        _check(deadline)
        if deadline is not None:
            chunk = max(1, min(chunk, int((deadline - time.perf_counter()) / max(max_call, 1e-3)) or 1))
        batch = list(actions[done : done + chunk])
        t0 = time.perf_counter()
        results = runtime.step_batch([(session, a) for a in batch])
        elapsed = time.perf_counter() - t0
        per_step = elapsed / len(batch)
        max_call = max(max_call, per_step)
        # a call that timed out loses the whole batch's replies: name the culprit
        culprit = next(
            (i for i, r in enumerate(results) if isinstance(r, SpadeError) and getattr(r, "kind", "") == FailureKind.TIMEOUT),
            None,
        )
        stop = False
        for i, (action, result) in enumerate(zip(batch, results)):
            if isinstance(result, SpadeError):
                at = i if culprit is None else culprit
                episode.error, episode.error_action = results[at], batch[at]  # type: ignore[assignment]
                stop = True
                break
            obs, reward, terminated, truncated, info = result
            episode.steps.append((obs, reward, terminated, truncated))
            _note(episode, info)
            if terminated or truncated:
                stop = True
                break
        if stop:
            break
        done += len(batch)
        chunk = max(1, min(MAX_CHUNK, int(CHUNK_SECONDS / max(per_step, 1e-6))))
    episode.max_call_s = max_call
    return episode


def _note(episode: Episode, info: Any) -> None:
    note = info.get(INFO_NOTE_KEY) if isinstance(info, dict) and info else None
    if isinstance(note, str) and note not in episode.notes and len(episode.notes) < 3:
        episode.notes.append(note)


def _check(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise BudgetExceeded("the candidate's time budget ran out")


def is_no_solution(exc: BaseException) -> bool:
    """True for the error a session raises when the program defines no ``solution()``."""
    return isinstance(exc, EnvProgramError) and getattr(exc, "stage", None) == NO_SOLUTION_STAGE
