"""Attacks of issue 40 on the caller's schema judging (points 3, 4, 5, 6, 10): a schema
that the bounds checker and jsonschema would read differently (a percent-escaped or
empty-segment ``$ref``), a fan-out hidden behind percent escapes, a sampler paying the
full deadline per point, numbers past float range, a Hub row that crashes its variant's
check, and a leak search quadratic in program text. Each ends in a verdict (or one
clear error) within its bound, never an internal error.

Nothing here runs inside the jail, so the static layer does not matter except where a
program is opened (``SpadeEnv(source=...)``): that test runs with it on and off.
"""

from __future__ import annotations

import random
import time
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
from test_trust_schemas import program, within

from spade_envs import schema_bounds
from spade_envs.gym_env import SpadeEnv
from spade_envs.parameters import (InvalidParametersError, ParametersSchemaError, check_schema, sample_points,
                                   validate_kwargs)


def _obj(prop: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": prop}, **extra}


#: schemas the bounds checker used to read otherwise than jsonschema (issue 40 point 3)
DISAGREEING = {
    # the checker looked up a harmless key "%61"; jsonschema decodes it to the recursive "a"
    "percent_escaped_recursion": _obj({"$ref": "#/$defs/%61", "default": 1}, **{"$defs": {
        "%61": {"type": "integer"}, "a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "integer"}]}}}),
    # the checker dropped the empty segment; jsonschema's resolver does not
    "empty_segment": _obj({"$ref": "#/$defs/a/", "default": 1}, **{"$defs": {"a": {"type": "integer"}}}),
    # 30 levels of anyOf [$ref, $ref] behind percent escapes, in a container the checker
    # does not walk as schemas (2**30 paths it never counted; valid defaults pass fast)
    "escaped_fan_out": _obj({"$ref": "#/$defs/h/%640", "default": 1}, **{"$defs": {"h": {
        **{f"d{i}": {"anyOf": [{"$ref": f"#/$defs/h/%64{i + 1}"},
                               {"$ref": f"#/$defs/h/d%{ord(str(i + 1)[0]):x}{str(i + 1)[1:]}"}]}
           for i in range(30)}, "d30": {"type": "integer", "minimum": 0}}}}),
    "escaped_slash_recursion": _obj({"$ref": "#/$defs/a%2Fb", "default": 1}, **{"$defs": {
        "a/b": {"type": "integer"}, "a": {"b": {"anyOf": [{"$ref": "#/$defs/a/b"}, {"type": "integer"}]}}}}),
}
#: numbers jsonschema or float() overflow on (issue 40 point 10)
NUMERIC = {
    "multiple_of_huge_default": _obj({"type": "number", "multipleOf": 0.5, "default": 10**400}),
    "huge_minimum": _obj({"type": "number", "minimum": 10**400, "maximum": 10**401, "default": 10**400}),
    "huge_enum_member": _obj({"type": "integer", "enum": [1, -(10**400)], "default": 1}),
}
#: a ``$schema`` jsonschema's draft lookup crashes on (found by the fuzz audit)
DISAGREEING["non_string_dialect"] = {**_obj({"type": "integer", "default": 1}), "$schema": 3}


@pytest.mark.parametrize("name", [*DISAGREEING, *NUMERIC])
def test_check_schema_gives_a_verdict(name):
    schema = {**DISAGREEING, **NUMERIC}[name]
    _, error, _ = within(lambda: check_schema(schema, "attack.py"))
    assert isinstance(error, ParametersSchemaError), repr(error)
    assert "attack.py: PARAMETERS" in str(error)


@pytest.fixture(params=["static-on", "static-off"])
def static_layer(request, monkeypatch):
    monkeypatch.setenv("SPADE_SANDBOX_STATIC", "1" if request.param == "static-on" else "0")


@pytest.mark.parametrize("name", [*DISAGREEING, *NUMERIC])
def test_spade_env_from_source_gives_a_verdict(static_layer, name):
    schema = {**DISAGREEING, **NUMERIC}[name]
    _, error, _ = within(lambda: SpadeEnv(source=program(schema), x=1), limit=3.0)
    assert isinstance(error, (ParametersSchemaError, InvalidParametersError)), repr(error)


def test_validation_runs_on_the_caps_own_reading():
    """A percent-escaped pointer to a real definition: accepted, and what is validated is
    what jsonschema itself would validate (one reading of the pointer, not two)."""
    schema = _obj({"$ref": "#/$defs/a%20b~1c", "default": 3}, **{"$defs": {"a b/c": {"type": "integer", "minimum": 2}}})
    assert check_schema(schema) is schema
    for value in (3, 1, "s", 2.5):
        ours = schema_bounds.best_error(schema, {"x": value}) is None
        theirs = jsonschema.Draft202012Validator(schema).is_valid({"x": value})
        assert ours == theirs, value
    with pytest.raises(InvalidParametersError, match="x"):
        validate_kwargs(schema, {"x": 1})
    assert "$ref" not in str(schema_bounds.inlined(schema, schema_bounds.PARAMETERS_LIMITS))


def test_a_dangling_or_non_schema_reference_is_refused():
    for ref in ("#/$defs/missing", "#/$defs/a/type", "#/properties/x/default"):
        with pytest.raises(ParametersSchemaError, match="refused"):
            check_schema(_obj({"$ref": ref, "default": 1}, **{"$defs": {"a": {"type": "integer"}}}))


def test_huge_numbers_in_kwargs_are_one_clear_error():
    schema = check_schema(_obj({"type": "number", "multipleOf": 0.5, "default": 1}))
    _, error, _ = within(lambda: validate_kwargs(schema, {"x": 10**400}))
    assert isinstance(error, InvalidParametersError) and "digits" in str(error)


def test_sampler_total_time_is_bounded(monkeypatch):
    """Each validation costs 0.4 s here: 40 tries used to cost 16 s; the budget caps all of them."""
    schema = check_schema(_obj({"type": "integer", "minimum": 0, "maximum": 10**6, "default": 5}))
    real = schema_bounds.best_error

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.4)
        return real(*args, **kwargs)

    monkeypatch.setattr(schema_bounds, "best_error", slow)
    t0 = time.monotonic()
    with pytest.raises(ParametersSchemaError, match="sampling"):
        sample_points(schema, 40, budget_s=1.0)
    assert time.monotonic() - t0 < 2.5


def test_a_slow_schema_is_a_verdict_not_an_accepted_program(monkeypatch):
    schema = check_schema(_obj({"type": "integer", "minimum": 0, "maximum": 9, "default": 5}))
    monkeypatch.setattr(schema_bounds, "DEADLINE_S", 0.0)
    with pytest.raises(ParametersSchemaError):
        sample_points(schema, 3, budget_s=0.5)


# -- a Hub row (point 4) ---------------------------------------------------------------
def test_a_row_whose_check_crashes_is_skipped_not_the_pull(monkeypatch):
    from spade_envs.registry import remote_rows

    def crash(*_a: Any) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(remote_rows, "parent_problem", crash)
    res = SimpleNamespace(skipped=[])
    row = {"seq": 20001, "version": 1, "source": "x = 1\n", "sha256": "0" * 64, "parent": "spade/Env-20001-v0"}
    prepared = remote_rows.vet({(20001, 1): row}, {}, "hub", "2026", res)
    assert prepared == {} and len(res.skipped) == 1
    assert "RecursionError" in res.skipped[0]["reason"] and res.skipped[0]["id"].endswith("20001-v1")


def test_a_variant_of_a_hostile_schema_gets_a_reason():
    from spade_envs.program import source_sha256
    from spade_envs.registry import remote_rows

    source = program(DISAGREEING["percent_escaped_recursion"])
    parent = {"seq": 20001, "version": 0, "source": source, "sha256": source_sha256(source)}
    variant = {**parent, "version": 1, "parent": "spade/Env-20001-v0", "params": {"x": 2}}
    problem = remote_rows.parent_problem(variant, {(20001, 0): parent, (20001, 1): variant}, {})
    assert problem and "PARAMETERS" in problem


# -- the leak search (point 6) -----------------------------------------------------------
def _reference_find_sequence(moves: tuple[tuple[str, ...], ...], text: str) -> tuple[int, int] | None:
    """The quadratic definition the linear search must agree with."""
    from designer.acceptance import leak

    toks = [(m.group(0).casefold(), m.start(), m.end()) for m in leak._TOKEN.finditer(text)]
    words = [t for move in moves for t in move]
    kept, pending, prev = [], 0, None
    for tok, start, end in toks:
        between = 0 if prev is None else start - prev
        if tok == "boxed":
            pending += between + 1
        else:
            kept.append((tok, start, end, pending + between))
            pending = 0
        prev = end
    bounds, acc = set(), 0
    for move in moves[:-1]:
        acc += len(move)
        bounds.add(acc)
    n = len(words)
    for i in range(len(kept) - n + 1):
        ok = kept[i][0] == words[0]
        for k in range(1, n):
            if not ok:
                break
            tok, _s, _e, gap = kept[i + k]
            ok = tok == words[k] and (1 <= gap <= leak.MAX_GAP if k in bounds
                                      else leak._within_move(text[kept[i + k - 1][2]:kept[i + k][1]]))
        if ok and n:
            return kept[i][1], kept[i + n - 1][2]
    return None


def test_the_leak_search_is_linear_and_agrees_with_its_definition():
    from designer.acceptance import leak

    rng = random.Random(40)
    seps = [" ", ", ", "\n", "-", "  ", "\\boxed{", "}", ",\n", "......", ":", " boxed "]
    for _ in range(3000):
        moves = tuple(tuple(rng.choice("ab1") for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 4)))
        text = "".join(rng.choice(["a", "b", "1", "up"]) + rng.choice(seps) for _ in range(rng.randint(0, 30)))
        assert leak._find_sequence(moves, text) == _reference_find_sequence(moves, text), (moves, text)
    # three 5,000-token boxed moves against a 30,000-token observation: ran past 200 s
    moves = (("a",) * 5000, ("a",) * 5000, ("a",) * 4999 + ("b",))
    found, error, _ = within(lambda: leak._find_sequence(moves, " ".join(["a"] * 30000)), limit=2.0)
    assert error is None and found is None
    solution = "\n".join("\\boxed{" + " ".join(["a"] * 5000) + "}" for _ in range(3))
    _, error, _ = within(lambda: leak.find_leak(solution, [" ".join(["a"] * 30000)]), limit=3.0)
    assert error is None


def test_the_acceptance_stage_turns_a_slow_sampler_into_its_verdict(monkeypatch):
    """The 86 s attack ended **accepted**: past the sampler's budget the program is rejected
    at ``parameters``."""
    from designer.acceptance import parameters as stage
    from designer.acceptance.config import AcceptanceConfig
    from designer.acceptance.verdicts import AcceptanceReport, StageVerdict
    from spade_envs.errors import Stage

    class Inner:
        config = AcceptanceConfig()

        def run(self, source: Any, filename: str = "<env>", config: Any = None) -> AcceptanceReport:
            return AcceptanceReport(filename=filename, expected=(Stage.SIZE_SYNTAX,),
                                    stages=[StageVerdict(Stage.SIZE_SYNTAX, True, "ok", 0.0)])

    def too_slow(*_a: Any, **_k: Any) -> Any:
        raise ParametersSchemaError("PARAMETERS: sampling points took longer than 4 s in all")

    monkeypatch.setattr(stage, "sample_points", too_slow)
    source = program(_obj({"type": "integer", "minimum": 0, "maximum": 9, "default": 1}))
    report = stage.ParameterSampling(Inner()).run(source, "slow.py")
    assert not report.accepted and report.failure is not None and report.failure.name is Stage.PARAMETERS
    assert "longer than" in report.failure.detail
