r"""reasoning-gym tasks as SPADE evaluates them: the task list, levels, entries and scoring.

Facts (no code) come from ``data/reasoning_gym_hard.json``, transcribed from SPADE's own
sources (its ``source`` block names the files and the commit): the RG hard split is the 100
tasks of the reasoning-gym paper's Appendix A.3, each at its ``hard`` configuration, in four
categories (Math / Algorithmic / Cognition / Logic); SPADE plays 8 episodes per task at
temperature 0.6 with at most 2 turns (one answer ends the episode).

- **levels**: ``hard`` is the A.3 configuration; ``easy`` is reasoning-gym's own default
  configuration of the dataset (SPADE's eval gives no easy column). ``--config`` overrides
  (:func:`parse_overrides`) apply on top of either.
- **entries**: as SPADE's environment does, a task's dataset is built with seed 42 and size
  500 (:data:`DATASET_SEED`, :data:`DATASET_SIZE`); episode ``i`` plays entry ``i % 500``
  (SPADE draws an entry at random from the same dataset, seeded by the episode index).
- **answers**: the last ``<answer>...</answer>`` of the reply, else its last ``\boxed{}``
  (:func:`extract_answer`); the score is the dataset's own ``score_answer``; a win is a
  score of 1 (``>= 1 - 1e-9``, SPADE's rule).
- **reference answers** (:func:`reference_answer`, for ``replay:reference``): the entry's
  ``answer``; four tasks have none (several answers are right) and are given one from the
  entry's metadata (:mod:`.reasoning_gym_reference`).

Import cost: ``reasoning_gym`` is imported on first use only; without it every entry point
raises one :class:`SpadeError` saying how to install it.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_envs.errors import SpadeError

DATA_FILE = Path(__file__).parent / "data" / "reasoning_gym_hard.json"
LEVELS = ("easy", "hard")
DATASET_SEED = 42
DATASET_SIZE = 500
WIN_SCORE = 1.0 - 1e-9
_ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class RGTask:
    """One task to play: a reasoning-gym dataset name, its category and configuration."""

    name: str
    category: str  #: math | algorithmic | cognition | logic
    level: str  #: easy | hard
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def task_id(self) -> str:
        """SPADE's id form, ``rg:<name>-<level>``."""
        return f"rg:{self.name}-{self.level}"


def rg_module() -> Any:
    """``reasoning_gym``, or one clear error when it is not installed."""
    try:
        import reasoning_gym
    except ImportError:
        raise SpadeError("the reasoning-gym suite needs the `reasoning-gym` package: "
                         "pip install 'spade-envs[evals]' (or pip install reasoning-gym)") from None
    return reasoning_gym


@functools.lru_cache(maxsize=1)
def split_data() -> dict[str, Any]:
    """The transcribed SPADE facts (``data/reasoning_gym_hard.json``)."""
    return json.loads(DATA_FILE.read_text(encoding="utf-8"))


def category_names() -> dict[str, str]:
    """``{"math": "Math", ...}`` in SPADE's reporting order."""
    return dict(split_data()["categories"])


def hard_split() -> list[RGTask]:
    """The 100 tasks of the RG hard split at their A.3 hard configurations, SPADE's order."""
    return [RGTask(t["name"], t["category"], "hard", dict(t["hard"])) for t in split_data()["tasks"]]


def select_tasks(level: str = "hard", names: list[str] | None = None,
                 overrides: dict[str | None, dict[str, Any]] | None = None) -> list[RGTask]:
    """The split's tasks at ``level`` (only ``names`` when given, in the order given), with
    ``overrides`` (from :func:`parse_overrides`) applied. Raises :class:`SpadeError` for an
    unknown level, task or configuration key."""
    if level not in LEVELS:
        raise SpadeError(f"unknown reasoning-gym level '{level}'; choose one of: {', '.join(LEVELS)}")
    by_name = {t.name: t for t in hard_split()}
    wanted = list(dict.fromkeys(names)) if names else list(by_name)
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise SpadeError(f"unknown reasoning-gym task(s): {', '.join(unknown)} (the split's tasks: "
                         f"{', '.join(sorted(by_name)[:8])}, ...; see `{DATA_FILE.name}`)")
    tasks = [RGTask(n, by_name[n].category, level, dict(by_name[n].config) if level == "hard" else {}) for n in wanted]
    return apply_overrides(tasks, overrides or {})


def parse_overrides(items: list[str]) -> dict[str | None, dict[str, Any]]:
    """``--config KEY=VALUE`` (every selected task that has the key) or ``TASK.KEY=VALUE``
    (that task only); VALUE is read as JSON when it parses, else as a string."""
    out: dict[str | None, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise SpadeError(f"--config '{item}': expected KEY=VALUE or TASK.KEY=VALUE")
        task, dot, name = key.strip().rpartition(".")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.setdefault(task if dot else None, {})[name] = value
    return out


def config_fields(name: str) -> set[str]:
    """The configuration keys reasoning-gym's dataset ``name`` accepts."""
    import dataclasses

    _, config_cls = rg_module().factory.DATASETS[name]
    return {f.name for f in dataclasses.fields(config_cls)} - {"seed", "size"}


def apply_overrides(tasks: list[RGTask], overrides: dict[str | None, dict[str, Any]]) -> list[RGTask]:
    names = {t.name for t in tasks}
    for task in overrides:
        if task is not None and task not in names:
            raise SpadeError(f"--config names task '{task}', which is not selected")
    out, used = [], set()
    for t in tasks:
        cfg = dict(t.config)
        fields = config_fields(t.name) if overrides else set()
        for key, value in (overrides.get(None) or {}).items():
            if key in fields:
                cfg[key], _ = value, used.add(key)
        for key, value in (overrides.get(t.name) or {}).items():
            if key not in fields:
                raise SpadeError(f"--config {t.name}.{key}: {t.name} has no setting '{key}' "
                                 f"(it has: {', '.join(sorted(fields))})")
            cfg[key] = value
        out.append(RGTask(t.name, t.category, t.level, cfg))
    unused = set(overrides.get(None) or {}) - used
    if unused:
        raise SpadeError(f"--config {', '.join(sorted(unused))}: no selected task has this setting")
    for t in out:
        dataset(t.name, json.dumps(t.config, sort_keys=True))  # a bad value is one error, before any play
    return out


@functools.lru_cache(maxsize=256)
def dataset(name: str, config_json: str, seed: int = DATASET_SEED, size: int = DATASET_SIZE) -> Any:
    """reasoning-gym's dataset ``name`` with this configuration (cached: entries are pure
    functions of seed and index)."""
    rg = rg_module()
    try:
        with _quiet():
            return rg.create_dataset(name, seed=seed, size=size, **json.loads(config_json))
    except (TypeError, ValueError, AssertionError) as exc:
        raise SpadeError(f"reasoning-gym rejects the configuration of {name}: {exc or type(exc).__name__}") from None


def entry(name: str, config: dict[str, Any], index: int) -> dict[str, Any]:
    """Entry ``index % size`` of the task's dataset (question, answer, metadata)."""
    ds = dataset(name, json.dumps(config, sort_keys=True))
    with _quiet():
        return ds[int(index) % len(ds)]


def _quiet() -> Any:
    """Some generators print progress dots to stdout (``bf``): they go to stderr, so that
    ``--json`` output stays one object."""
    import contextlib
    import sys

    return contextlib.redirect_stdout(sys.stderr)


def question_text(item: dict[str, Any]) -> str:
    """The observation SPADE's environment shows: the question plus its boxed-answer line,
    wrapped in SPADE's reasoning-gym prompt."""
    data = split_data()
    return data["prompt"].format(question=item["question"] + data["question_suffix"])


def extract_answer(text: str) -> str | None:
    r"""The last ``<answer>`` block's content, else the last ``\boxed{}``'s, else None."""
    from spade_envs.actions import extract_all_boxed

    if not isinstance(text, str):
        return None
    tagged = _ANSWER_TAG.findall(text)
    if tagged:
        return tagged[-1].strip()
    boxed = extract_all_boxed(text)
    return boxed[-1] if boxed else None


def score(name: str, config: dict[str, Any], item: dict[str, Any], answer: str | None) -> float:
    """reasoning-gym's own ``score_answer`` of ``answer`` for ``item`` (0.0 if it raises)."""
    ds = dataset(name, json.dumps(config, sort_keys=True))
    try:
        return float(ds.score_answer(answer=answer, entry=item))
    except Exception:  # a scorer that chokes on a malformed answer gives it nothing
        return 0.0


def is_win(value: float) -> bool:
    return value >= WIN_SCORE


def reference_answer(name: str, item: dict[str, Any]) -> str:
    """A gold answer for ``item`` (see the module docstring)."""
    from .reasoning_gym_reference import reference_for

    return reference_for(name, item)
