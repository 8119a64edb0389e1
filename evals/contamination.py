"""Decontamination of imported pools: does a program play a task an evaluated suite scores?

A pool from others may hold games written after the very tasks our evals measure. Two
suites are checked, by names only (no package needed for the first):

- the reasoning-gym hard split (:mod:`.reasoning_gym_tasks`, its 100 task names): a task
  matches when its words appear, in order and adjacent, among the words of the program's
  class name (``ShortestPathEnv`` -> ``shortest path``; ``FogMazeEnv`` -> ``fog maze``
  holds ``maze``) or of its ``METADATA`` name, or when the program names the task in a
  ``reasoning_gym`` call (``create_dataset("sudoku")``);
- BFCL's multi-turn function sets (its function docs, when ``bfcl-eval`` is installed) and
  ACEBench's (from ``$ACEBENCH_ROOT`` when set): a tool the program declares (a
  ``tool_<name>`` method or a ``get_tools`` name in its source) with a function's exact
  name. Names of one or two letters (``ls``, ``cd``) count only together with a second
  function of the same set.

:func:`eval_overlap` returns the matches as ``"suite: task (where)"`` strings (empty: no
overlap). The pool importer records them in ``metadata["pool"]["eval_overlap"]``, tags the
entry ``eval-overlap`` and counts them in its summary; :func:`excluded_from_training`
is the rule a training split applies to such an entry (excluded unless the caller opts in).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
from pathlib import Path
from typing import Any

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_RG_CALL = re.compile(r"""reasoning_gym\s*\.\s*create_dataset\(\s*['"]([a-z0-9_]+)['"]""")
OVERLAP_TAG = "eval-overlap"


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(name.replace("_", " ").replace("-", " "))]


@functools.lru_cache(maxsize=1)
def rg_task_words() -> dict[str, tuple[str, ...]]:
    """``task name -> its words`` of the reasoning-gym hard split."""
    from .reasoning_gym_tasks import split_data

    return {t["name"]: tuple(t["name"].split("_")) for t in split_data()["tasks"]}


@functools.lru_cache(maxsize=1)
def function_sets() -> dict[str, frozenset[str]]:
    """``suite -> function names`` of BFCL and ACEBench that are available here."""
    out: dict[str, frozenset[str]] = {}
    try:
        from .bfcl import FUNC_DOC_FILES, data_dir

        folder = data_dir() / "multi_turn_func_doc"
        names: set[str] = set()
        for file in FUNC_DOC_FILES.values():
            for line in (folder / file).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    names.add(str(json.loads(line).get("name", "")))
        out["bfcl"] = frozenset(n for n in names if n)
    except Exception:  # noqa: BLE001 - the suite is not installed: nothing to compare with
        pass
    root = os.environ.get("ACEBENCH_ROOT")
    if root:
        names = set()
        for path in Path(root).rglob("data_*.json"):
            try:
                text = path.read_text(encoding="utf-8")
                rows = json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines() if x.strip()]
            except (OSError, ValueError):
                continue
            for row in rows:
                for fn in row.get("function", []) if isinstance(row, dict) else []:
                    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                        names.add(fn["name"])
        if names:
            out["acebench"] = frozenset(names)
    return out


def _contains(words: list[str], task: tuple[str, ...]) -> bool:
    n = len(task)
    return any(tuple(words[i:i + n]) == task for i in range(len(words) - n + 1))


def _program_names(source: str) -> tuple[list[str], set[str]]:
    """``(class and METADATA names, tool names)`` of a source (empty when it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [], set()
    names: list[str] = []
    tools: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name.endswith("Env"):
            names.append(node.name[:-3])
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("tool_"):
            tools.add(node.name[5:])
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                isinstance(t, ast.Attribute) and t.attr == "_tools" for t in node.targets):
            tools |= {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "name" and isinstance(v, ast.Constant) \
                        and isinstance(v.value, str):
                    names.append(v.value) if len(v.value.split()) > 1 else tools.add(v.value)
    return names, tools


def eval_overlap(source: str) -> list[str]:
    """The evaluated tasks and functions ``source`` overlaps (see the module docstring)."""
    if not isinstance(source, str) or len(source) > 2_000_000:
        return []
    names, tools = _program_names(source)
    out: list[str] = []
    for task, words in rg_task_words().items():
        where = next((n for n in names if _contains(_words(n), words)), None)
        if where is not None:
            out.append(f"reasoning-gym hard: {task} (name {where!r})")
    for task in sorted(set(_RG_CALL.findall(source)) & set(rg_task_words())):
        out.append(f"reasoning-gym hard: {task} (create_dataset)")
    for suite, functions in function_sets().items():
        hits = sorted(tools & functions)
        if [h for h in hits if len(h) > 2] or len(hits) >= 2:
            out.append(f"{suite}: {', '.join(hits[:8])} (tools)")
    return list(dict.fromkeys(out))


def excluded_from_training(metadata: dict[str, Any], *, include_overlap: bool = False) -> bool:
    """Whether an entry with this metadata stays out of training splits (it overlaps an
    evaluated suite and the caller did not opt in)."""
    pool = metadata.get("pool") if isinstance(metadata, dict) else None
    return bool(not include_overlap and isinstance(pool, dict) and pool.get("eval_overlap"))
