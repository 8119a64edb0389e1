"""The internal-error audit of issue 40: random schemas, resume rows and results files
fed to the caller's paths that read others' data, for a bounded time. Every input must
end in the path's verdict or its one clear error (never another exception) within the
path's bound. Seeded: a failure names the seed and the input, and reruns the same.

(Pool folders are the pool importer's audit: ``tests/test_trust_pool*``.)
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from spade_envs import schema_bounds
from spade_envs.errors import SpadeError
from spade_envs.parameters import (SAMPLE_BUDGET_S, InvalidParametersError, ParametersSchemaError, check_schema,
                                   sample_points, validate_kwargs)

#: wall seconds each fuzz loop may run (all three together stay well under 30 s)
LOOP_S = 6.0

_KEYS = ["type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
         "minLength", "maxLength", "items", "prefixItems", "minItems", "maxItems", "contains", "properties",
         "required", "additionalProperties", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref",
         "$defs", "definitions", "default", "pattern", "format", "$schema", "propertyNames", "dependentRequired",
         "uniqueItems", "$id", "$anchor", "minProperties", "title"]
_SCHEMAS = ["https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#",
            "http://json-schema.org/draft-04/schema#", "urn:nothing"]


def _number(rng: random.Random) -> Any:
    if rng.random() < 0.05:  # past what floats and the caps hold
        return rng.choice([-(10**400), 10**400, 2**63 + 1])
    return rng.choice([0, 1, -1, 0.5, 1e-308, 1e308, 2, 3, 0.1, 7, True, "1", None, 2**62])


def _ref(rng: random.Random, names: list[str]) -> str:
    name = rng.choice(names + ["%61", "a/", "", "~0", "~1", "%2F", "%", "%zz", "0"])
    head = rng.choice(["#/$defs/", "#/definitions/", "#/", "#", "other.json#/", "#/properties/x/", "#/$defs/%"])
    return head + name + rng.choice(["", "/", "/0", "/anyOf/0", "%20"])


def _schema(rng: random.Random, depth: int, names: list[str]) -> Any:
    if depth <= 0 or rng.random() < 0.2:
        return rng.choice([True, False, {}, {"type": "integer"}, {"$ref": _ref(rng, names)}, 1, "x", []])
    node: dict[str, Any] = {}
    for _ in range(rng.randint(1, 4)):
        key = rng.choice(_KEYS)
        if key in ("items", "contains", "not", "if", "then", "else", "additionalProperties", "propertyNames"):
            node[key] = _schema(rng, depth - 1, names)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            node[key] = [_schema(rng, depth - 1, names) for _ in range(rng.randint(0, 3))]
        elif key in ("properties", "$defs", "definitions"):
            node[key] = {rng.choice(names): _schema(rng, depth - 1, names) for _ in range(rng.randint(0, 3))}
        elif key == "$ref":
            node[key] = _ref(rng, names)
        elif key == "type":
            node[key] = rng.choice(["integer", "number", "string", "object", "array", "boolean", "null",
                                    ["integer", "null"], "bogus", 3])
        elif key in ("enum", "required"):
            node[key] = [rng.choice([_number(rng), "a", "x", None]) for _ in range(rng.randint(0, 4))]
        elif key in ("pattern", "format", "$schema", "$id", "$anchor", "title"):
            node[key] = rng.choice(_SCHEMAS + ["^(a|aa)+$", "date", "a" * 1200, "x"])
        else:
            node[key] = _number(rng)
    return node


def _parameters(rng: random.Random) -> dict[str, Any]:
    names = ["a", "b", "x", "a b", "a/b", "%61", ""]
    props = {}
    for name in rng.sample(["x", "y", "level", "n"], rng.randint(1, 3)):
        spec = _schema(rng, 3, names)
        if isinstance(spec, dict) and rng.random() < 0.9:
            spec["default"] = rng.choice([1, 0, -1, "a", 0.5, [], {}, None, 2, 3, 2**62])
        props[name] = spec
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if rng.random() < 0.7:
        schema["$defs"] = {n: _schema(rng, 3, names) for n in rng.sample(names, rng.randint(1, 4))}
    if rng.random() < 0.2:
        schema["$schema"] = rng.choice([*_SCHEMAS, 3, None, ["x"]])
    return schema


def _timed(fn: Any, bound: float, what: str) -> Any:
    t0 = time.monotonic()
    try:
        return fn()
    finally:
        spent = time.monotonic() - t0
        assert spent < bound, f"{what} took {spent:.1f} s (bound {bound} s)"


def test_random_schemas_end_in_a_verdict():
    rng = random.Random(4040)
    end, n, accepted = time.monotonic() + LOOP_S, 0, 0
    while time.monotonic() < end:
        n += 1
        schema = _parameters(rng)
        try:
            try:
                checked = _timed(lambda: check_schema(schema, "fuzz.py"), schema_bounds.DEADLINE_S * 2 + 1, "check")
            except ParametersSchemaError:
                continue
            accepted += 1
            for _ in range(3):
                kwargs = {k: rng.choice([1, -5, "s", 0.25, [1], None, 10**30, 10**400]) for k in checked["properties"]}
                try:
                    _timed(lambda: validate_kwargs(checked, kwargs), schema_bounds.DEADLINE_S + 1, "validate")
                except InvalidParametersError:
                    pass
            try:
                _timed(lambda: sample_points(checked, 3, seed=n, include_high=True), SAMPLE_BUDGET_S + 3, "sample")
            except ParametersSchemaError:
                pass
        except (ParametersSchemaError, InvalidParametersError, AssertionError):
            raise
        except Exception as exc:  # noqa: BLE001 - the audit: any other exception is an internal error
            pytest.fail(f"internal error on schema #{n}: {type(exc).__name__}: {exc}\n"
                        f"{json.dumps(schema, default=str)[:3000]}")
    assert n > 50 and accepted > 0, (n, accepted)


def _row(rng: random.Random) -> Any:
    pick = lambda *xs: rng.choice(xs)  # noqa: E731
    row: dict[str, Any] = {}
    for key in rng.sample(["id", "seed", "opponent", "model_seat", "outcome", "returns", "passed", "transcript",
                           "steps", "error"], rng.randint(0, 10)):
        row[key] = {
            "id": pick("spade/Env-00001-v0", "g", 3, None, "<script>"),
            "seed": pick(0, 1, -1, "0", 10**400, True),
            "opponent": pick("random", "self", 1),
            "model_seat": pick(0, 1, 99, -1, "0"),
            "outcome": pick("win", "loss", "draw", "error", "<b>"),
            "returns": pick([1.0, -1.0], [], [float("nan")], ["x"], 3, [10**400]),
            "passed": pick(True, False, "yes"),
            "transcript": pick({"actions": ["\\boxed{1}"]}, {"actions": [3]}, {"actions": "x"}, [], None,
                               {"actions": ["a"] * 5, "messages": [{"role": 1}], "terminated": "<script>"}),
            "steps": pick(0, -3, "x"), "error": pick(None, "boom", 3),
        }[key]
    return rng.choice([row, row, row, [], "x", None, 5])


def test_random_resume_rows_are_recomputed_or_refused():
    from spade_envs.evals.registry_suite import active_records
    from spade_envs.evals.resume_rows import checked

    records = active_records()[:2]
    rng = random.Random(4041)
    end, n = time.monotonic() + LOOP_S, 0
    while time.monotonic() < end:
        n += 1
        suite = rng.choice(["games", "registry"])
        row = _row(rng)
        key = rng.choice(["spade/Env-00001-v0#0", "g|random|0|0", "x"]) if rng.random() < 0.5 else (
            f"{row.get('id')}#{row.get('seed')}" if isinstance(row, dict) else "k")
        try:
            out = _timed(lambda: checked(suite, {key: row}, records=records, refused=lambda k, w: None), 20, "resume")
        except Exception as exc:  # noqa: BLE001 - the audit
            pytest.fail(f"internal error on row #{n} ({suite}, {key!r}): {type(exc).__name__}: {exc}\n{row!r}"[:3000])
        for kept in out.values():
            assert isinstance(kept.get("passed"), bool)
    assert n > 20


def _results(rng: random.Random) -> Any:
    rate = lambda: rng.choice([{"rate": 0.5, "ci95": [0.1, 0.9], "n": 4}, {"rate": "x"}, 3, None, {}])  # noqa: E731
    out: dict[str, Any] = {"suite": rng.choice(["registry", "games", "bfcl-v4-multi-turn", 3, "<b>"]),
                           "agent": rng.choice(["a", "\x1b[2Jx", ["a"], None]),
                           "summary": rng.choice([{}, {"state_ok": rate(), "response_ok": rate(),
                                                       "process_acc": rng.choice([0.5, "x", None]),
                                                       "per_skill": {"$\\x$": {"success": rate()}}}, [], "s"]),
                           "entries": rng.choice([[], [{"id": "a", "passed": True}], [1], [{"id": [1], "passed": "y"}],
                                                  [{"id": "g", "opponent": "self", "outcome": "win", "passed": True}]])}
    for key in rng.sample(list(out), rng.randint(0, 1)):
        del out[key]
    if rng.random() < 0.3:
        out["run"] = rng.choice(["r", 3, "<script>", "\x1b]0;x\x07"])
    return out


def test_random_results_files_load_or_are_one_clear_error(tmp_path: Path):
    from spade_envs.evals.report import leaderboard_page, markdown_table
    from spade_envs.evals.results_file import load_results

    rng = random.Random(4042)
    end, n = time.monotonic() + LOOP_S / 2, 0
    path = tmp_path / "results.json"
    while time.monotonic() < end:
        n += 1
        data = _results(rng)
        path.write_text(rng.choice([json.dumps(data), "[" * rng.randint(1, 200_000), "{", ""]), encoding="utf-8")
        try:
            loaded = load_results(path)
        except SpadeError:
            continue
        try:
            markdown_table([loaded])
            leaderboard_page([loaded])
        except Exception as exc:  # noqa: BLE001 - the audit
            pytest.fail(f"a results file load_results accepted broke the leaderboard: {type(exc).__name__}: {exc}"
                        f"\n{json.dumps(data, default=str)[:2000]}")
    assert n > 20
