"""ACEBench's scenario classes, executed the way ACEBench's execution role runs them.

The scenario classes (``BaseApi``, ``MessageApi``, ``ReminderApi``, ``FoodPlatform``,
``Travel``) are third-party Python from the ACEBench checkout. :func:`scenario_program`
turns the files of one agent category into ONE environment program (the files' sources,
their imports of each other removed, plus a small driver class), so they run through
the ordinary runtimes: the sandbox by default, in-process only with
``trust_remote_code=True``. The caller never executes checkout code itself.

:class:`AceWorld` mirrors ACEBench's execution semantics, which decide the end state:

- every involved class is constructed, then ``_load_scenario`` runs twice, with the
  class's own initial config and then with the ``BaseApi`` config (ACEBench does both);
- a call goes to EVERY involved instance that has a public method of that name (in the
  order of ``involved_classes``; an inherited ``turn_on_wifi`` turns on each one's Wi-Fi),
  and the observation is the last result: a dict as JSON, other values ``str``-ed,
  an exception as ``Error during execution: ...``;
- a message that does not decode is answered with ACEBench's fixed reply and executes
  nothing;
- the ``result`` record is ``[{Class: {attr: value}}]`` over :data:`SAVED_ATTRIBUTES`, as
  JSON (ACEBench saves it to a file and reads it back, so dict keys become strings), and
  it is ``[]`` when no message was ever executed.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from spade_envs.errors import SpadeError
from spade_envs.runtime import EnvRuntime

from .acebench_calls import AceCallError, decode_calls

#: The attributes ACEBench records per scenario class (its ``SAVED_CLASS`` table).
SAVED_ATTRIBUTES: dict[str, list[str]] = {
    "BaseApi": ["wifi", "logged_in"],
    "MessageApi": ["inbox"],
    "ReminderApi": ["reminder_list"],
    "FoodPlatform": ["users", "logged_in_users", "orders"],
    "Finance": ["user_accounts", "is_logged_in", "deposit_history", "withdrawal_history", "loan_history",
                "orders", "holdings"],
    "Travel": ["users", "reservations"],
}

#: ACEBench's execution reply to a message that is not a call list.
UNDECODABLE_REPLY = "Please do not ask me any questions, use the known conditions to solve the problem"

_FOLDERS = {"agent_multi_step": "multi_step", "agent_multi_turn": "multi_turn"}
_CHECKOUT_IMPORT = re.compile(r"^\s*(from|import)\s+model_inference\b.*$", re.M)

_DRIVER = '''

_ACE_CLASSES = {{{classes}}}


class AceScenarioEnv:
    """Driver: actions are JSON commands from spade-envs' ACEBench harness."""

    def __init__(self, involved=(), config=None, saved=None, **kwargs):
        self._involved = list(involved)
        self._config = dict(config or {{}})
        self._saved = dict(saved or {{}})
        self.reset()

    def reset(self, seed=None):
        self._inst = {{}}
        for name in self._involved:
            inst = _ACE_CLASSES[name]()
            inst._load_scenario(copy.deepcopy(self._config.get(name, {{}})), long_context=False)
            inst._load_scenario(copy.deepcopy(self._config.get("BaseApi", {{}})), long_context=False)
            self._inst[name] = inst
        return "ready", {{}}

    def solution(self):
        return ""

    def _run(self, targets, kwargs):
        result = None
        for cls, method in targets:
            result = getattr(self._inst[cls], method)(**kwargs)
        return result

    def step(self, action):
        command = json.loads(action)
        if command["op"] == "state":
            out = []
            for name in self._involved:
                attrs = {{}}
                for attr in self._saved.get(name, []):
                    if hasattr(self._inst[name], attr):
                        attrs[attr] = getattr(self._inst[name], attr)
                out.append({{name: attrs}})
            return json.dumps(out, default=str), 0.0, False, False, {{}}
        try:
            result = self._run(command["targets"], command["kwargs"])
        except Exception as exc:
            return json.dumps({{"text": "Error during execution: " + str(exc)}}), 0.0, False, False, {{}}
        if isinstance(result, str):
            text = result
        elif isinstance(result, dict):
            try:
                text = json.dumps(result)
            except Exception:
                text = str(result)
        else:
            text = str(result)
        return json.dumps({{"text": text}}), 0.0, False, False, {{}}
'''


def _defined_classes(path: Path) -> dict[str, tuple[list[str], set[str]]]:
    """``{class: (base names, public method names)}`` of a file, read without running it."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise SpadeError(f"ACEBench scenario file {path} does not parse: {exc}") from None
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and not n.name.startswith("_")}
            out[node.name] = ([b.id for b in node.bases if isinstance(b, ast.Name)], methods)
    return out


class ScenarioProgram:
    """The scenario classes of one agent category as one environment program."""

    def __init__(self, root: str | Path, category: str, language: str = "en") -> None:
        if category not in _FOLDERS:
            raise SpadeError(f"no ACEBench scenarios for category '{category}'")
        folder = Path(root) / "model_inference" / _FOLDERS[category] / f"scenarios{language}"
        files = sorted(folder.rglob("*.py"))
        if not files:
            raise SpadeError(f"no ACEBench scenario classes under {folder}: is --data an ACEBench checkout?")
        classes: dict[str, tuple[list[str], set[str]]] = {}
        texts: dict[Path, str] = {}
        defined_in: dict[Path, list[str]] = {}
        for f in files:
            defined = _defined_classes(f)
            if defined:
                classes.update(defined)
                defined_in[f] = list(defined)
                texts[f] = f.read_text(encoding="utf-8")

        def depth(name: str, seen: frozenset = frozenset()) -> int:
            bases = [b for b in classes.get(name, ([], set()))[0] if b in classes and b not in seen]
            return 1 + max((depth(b, seen | {name}) for b in bases), default=-1)

        # files of base classes first, so that subclasses find them
        order = sorted(texts, key=lambda f: (max(depth(c) for c in defined_in[f]), str(f)))
        body = "\n\n".join(_CHECKOUT_IMPORT.sub("", texts[f]) for f in order)
        names = ", ".join(f"{n!r}: {n}" for n in classes)
        self.source = "import copy\nimport json\n\n" + body + _DRIVER.format(classes=names)
        self.methods = {name: self._methods(name, classes) for name in classes}

    @staticmethod
    def _methods(name: str, classes: dict[str, tuple[list[str], set[str]]]) -> set[str]:
        bases, own = classes.get(name, ([], set()))
        out = set(own)
        for b in bases:
            if b in classes and b != name:
                out |= ScenarioProgram._methods(b, classes)
        return out


class AceWorld:
    """One entry's scenario instances, in a runtime session."""

    def __init__(self, program: ScenarioProgram, involved: list[str], config: dict[str, Any],
                 runtime: EnvRuntime) -> None:
        unknown = [c for c in involved if c not in program.methods]
        if unknown:
            raise SpadeError(f"ACEBench scenario class(es) {', '.join(unknown)} not found in the checkout")
        self.involved = list(involved)
        self.program = program
        saved = {c: SAVED_ATTRIBUTES.get(c, []) for c in involved}
        self._session = runtime.open(program.source, kwargs={"involved": involved, "config": config, "saved": saved},
                                     filename="acebench_scenarios.py")
        self.executed = 0

    def _call(self, name: str, kwargs: dict[str, Any]) -> str:
        targets = [[c, name] for c in self.involved if name in self.program.methods[c]]
        if not targets:
            return f"Error during execution: name '{name}' is not defined"
        try:
            payload = json.dumps({"op": "call", "targets": targets, "kwargs": kwargs})
        except (TypeError, ValueError):
            return "Error during execution: arguments are not JSON values"
        obs = self._session.step(payload)[0]
        return json.loads(obs)["text"]

    def execute(self, message: str) -> list[Any] | str:
        """Run one agent message; the observation ACEBench would send back."""
        try:
            calls = decode_calls(message)
        except AceCallError:
            return UNDECODABLE_REPLY
        self.executed += 1
        out: list[Any] = []
        for name, kwargs in calls:
            text = self._call(name, kwargs)
            try:
                out.append(json.loads(text))
            except (json.JSONDecodeError, RecursionError):
                out.append(text)
        return out

    def result(self) -> list[dict[str, Any]]:
        """ACEBench's ``result`` record of the final state (``[]`` if nothing ever ran)."""
        if not self.executed:
            return []
        return json.loads(self._session.step(json.dumps({"op": "state"}))[0])

    def close(self) -> None:
        self._session.close()
