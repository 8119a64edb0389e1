"""Attacks: a program's ``PARAMETERS`` or tool schemas make the CALLER do unbounded work
(a backtracking regex against a long default, 32 levels of ``anyOf [$ref, $ref]``, a huge
enum, deep nesting). Each must be refused within a second, with one clear error, at
every entry point: ``spade validate``, ``gym.make(id, **kw)``, ``SpadeEnv(source, ...)``
and a pull (DESIGN.md section 5).

Before the bounds, the first two spun for minutes: each attack runs in a daemon thread
that must use less than :data:`LIMIT_S` CPU seconds.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import pytest
from registry_helpers import spade_home  # noqa: F401 - fixture

from spade_envs.errors import EnvProgramError, SpadeError, ToolSpecError
from spade_envs.gym_env import SpadeEnv
from spade_envs.parameters import InvalidParametersError, ParametersSchemaError, check_schema
from spade_envs.registry.store import Registry
from spade_envs.tools import normalize_tool_spec

LIMIT_S = 1.0


def _ref_bomb(levels: int = 32) -> dict[str, Any]:
    defs = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(levels)}
    defs[f"d{levels}"] = {"type": "integer", "maximum": -1}
    return {"type": "object", "$defs": defs, "properties": {"n": {"$ref": "#/$defs/d0", "default": 1}}}


def _deep(levels: int = 150) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        node = {"type": "array", "items": node}
    return {"type": "object", "properties": {"grid": {**node, "default": []}}}


SCHEMAS = {
    "backtracking_pattern": {"type": "object", "properties": {
        "word": {"type": "string", "pattern": "^(a|aa)+$", "default": "a" * 60 + "b"}}},
    "ref_fan_out": _ref_bomb(),
    "huge_enum": {"type": "object", "properties": {
        "pick": {"type": "integer", "enum": list(range(5_000)), "default": 0}}},
    "deep_nesting": _deep(),
    "pattern_properties": {"type": "object", "properties": {"x": {"type": "integer", "default": 1}},
                           "patternProperties": {"^(a|aa)+$": {"type": "integer"}}},
    "recursive_ref": {"type": "object", "$defs": {"t": {"anyOf": [{"$ref": "#/$defs/t"}, {"type": "integer"}]}},
                      "properties": {"t": {"$ref": "#/$defs/t", "default": 1}}},
}


def program(schema: dict[str, Any]) -> str:
    return (f"PARAMETERS = {json.dumps(schema)}\n\n"
            "class KnobEnv:\n"
            "    def __init__(self, **kwargs):\n"
            "        self.kwargs = kwargs\n\n"
            "    def reset(self, seed=None):\n"
            "        return 'say \\\\boxed{1}', {}\n\n"
            "    def step(self, action):\n"
            "        return 'ok', float(action.strip() == '\\\\boxed{1}'), True, False, {}\n\n"
            "    def solution(self):\n"
            "        return '\\\\boxed{1}'\n").replace("true", "True").replace("false", "False")


def within(fn: Callable[[], Any], limit: float = LIMIT_S) -> tuple[Any, BaseException | None, float]:
    """``fn()`` in a daemon thread: (result, exception, CPU seconds it used). Fails when
    it used more than ``limit`` CPU seconds (CPU time, not wall time: the test machine is
    shared) or is still running after ``30 * limit`` wall seconds (a hang).

    The collector is held off during ``fn``: late in the suite a full collection of
    everything earlier tests left behind can take a second on its own, and it would be
    charged to whichever attack allocated at that moment (collecting first would cost
    that second at every call)."""
    out: dict[str, Any] = {}

    def run() -> None:
        t0 = time.thread_time()
        try:
            out["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            out["error"] = exc
        out["cpu"] = time.thread_time() - t0

    thread = threading.Thread(target=run, daemon=True)
    gc.disable()
    try:
        thread.start()
        thread.join(limit * 30)
    finally:
        gc.enable()
    assert not thread.is_alive(), f"still running after {limit * 30:.0f} s"
    assert out["cpu"] < limit, f"used {out['cpu']:.2f} CPU seconds (limit {limit} s)"
    return out.get("result"), out.get("error"), out["cpu"]


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_check_schema_refuses_fast(name):
    _, error, _ = within(lambda: check_schema(SCHEMAS[name], "attack.py"))
    assert isinstance(error, ParametersSchemaError), error
    assert "attack.py: PARAMETERS" in str(error)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_spade_env_from_source_refuses_fast(name):
    source = program(SCHEMAS[name])
    prop, spec = next(iter(SCHEMAS[name]["properties"].items()))
    _, error, _ = within(lambda: SpadeEnv(source=source, **{prop: spec["default"]}))
    assert isinstance(error, (ParametersSchemaError, InvalidParametersError)), error


@pytest.mark.parametrize("name", ["backtracking_pattern", "ref_fan_out", "deep_nesting"])
def test_gym_make_of_a_stored_entry_refuses_fast(spade_home, name):  # noqa: F811
    with Registry.open() as reg:
        env_id = str(reg.add(program(SCHEMAS[name]), filename=f"{name}.py").env_id)
    _, error, _ = within(lambda: gym.make(env_id, word="aaa", n=1, grid=[]))
    assert isinstance(error, SpadeError) and "PARAMETERS" in str(error), error


@pytest.mark.parametrize("name", ["backtracking_pattern", "ref_fan_out"])
def test_spade_validate_rejects_fast(tmp_path, capsys, name):
    from spade_envs.cli.main import main

    path = tmp_path / f"{name}.py"
    path.write_text(program(SCHEMAS[name]))
    code, error, took = within(lambda: main(["validate", str(path), "--json", "--no-novelty"]), limit=20.0)
    assert error is None and code == 1
    report = json.loads(capsys.readouterr().out)
    assert report["rejected_at"] == "parameters"
    assert report["stages"][-1]["seconds"] < LIMIT_S


def test_pull_quarantines_fast(spade_home, tmp_path):  # noqa: F811
    """The rows a pull merges are judged by the caller's acceptance: bounded too."""
    from spade_envs.designer.acceptance import AcceptancePipeline
    from spade_envs.registry.hub_export import export, read_rows
    from spade_envs.registry.sharing import merge_rows

    with Registry.open(tmp_path / "src.sqlite3") as src:
        for name in ("backtracking_pattern", "ref_fan_out"):
            src.add(program(SCHEMAS[name]), filename=f"{name}.py", generation=1)
        export(src.list(), tmp_path / "ds")
    rows = read_rows(tmp_path / "ds")
    pipeline = AcceptancePipeline()

    def accept(source: str, name: str) -> dict:
        return pipeline.run(source, filename=name).to_json()

    with Registry.open() as reg:
        res, error, _ = within(lambda: merge_rows(reg, rows, repo="evil/reg", commit="c1", accept=accept), limit=30.0)
    assert error is None, error
    assert len(res.quarantined) == 2 and all("parameters" in q["reason"] for q in res.quarantined)


def _tool(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "probe", "description": "", "parameters": parameters}}


@pytest.mark.parametrize("parameters", [
    _ref_bomb(),
    {"type": "object", "$defs": {"t": {"anyOf": [{"$ref": "#/$defs/t"}, {"type": "integer"}]}},
     "properties": {"t": {"$ref": "#/$defs/t"}}},
    _deep(),
    {"type": "object", "properties": {"x": {"enum": list(range(5_000))}}},
    {"type": "object", "properties": {"x": {"type": "string", "pattern": "(a|aa)+" * 200}}},
], ids=["ref_fan_out", "recursive_ref", "deep_nesting", "huge_enum", "long_pattern"])
def test_tool_schemas_are_bounded_too(parameters):
    _, error, _ = within(lambda: normalize_tool_spec(_tool(parameters)))
    assert isinstance(error, ToolSpecError) and isinstance(error, EnvProgramError), error


def test_ordinary_schemas_still_pass():
    """What the seeds and SPADE's programs use stays allowed (patterns in tool schemas:
    their arguments are checked inside the sandbox worker)."""
    spec = normalize_tool_spec(_tool({"type": "object", "properties": {
        "date": {"type": "string", "pattern": "^2025-[01][0-9]-[0-3][0-9]$"},
        "who": {"type": "array", "items": {"$ref": "#/$defs/email"}, "uniqueItems": True}},
        "$defs": {"email": {"type": "string", "format": "email"}}, "required": ["date"]}))
    assert spec["function"]["name"] == "probe"
    schema = {"type": "object", "properties": {
        "level": {"type": ["integer", "null"], "minimum": 0, "maximum": 4, "default": None},
        "mode": {"anyOf": [{"const": "easy"}, {"const": "hard"}], "default": "easy"},
        "sizes": {"type": "array", "items": {"type": "integer"}, "maxItems": 4, "default": [1, 2]}}}
    assert check_schema(schema) is schema


def test_validation_runs_under_a_deadline():
    """The net under the bounds: every keyword check looks at the clock."""
    from spade_envs.schema_bounds import SchemaDeadlineError, best_error, meta_error

    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert best_error(schema, {"a": 1}) is None and best_error(schema, {"a": "x"}) is not None
    with pytest.raises(SchemaDeadlineError):
        best_error(schema, {"a": 1}, deadline_s=-1.0)
    with pytest.raises(SchemaDeadlineError):
        meta_error(schema, deadline_s=-1.0)
