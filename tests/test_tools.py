"""Tool specifications (spade_envs.tools): schema-checked specs and argument validation."""

from __future__ import annotations

import pytest

from spade_envs.errors import EnvProgramError, ToolSpecError
from spade_envs.runtime import InProcessRuntime
from spade_envs.tools import ArgumentValidator, normalize_tool_spec, validate_tool_specs

ACCOUNT = {
    "type": "function",
    "function": {
        "name": "get_balance",
        "description": "Balance of one account.",
        "parameters": {
            "type": "object",
            "properties": {
                "account": {"type": "string", "pattern": "^AC-[0-9]{5}$"},
                "currency": {"type": "string", "enum": ["EUR", "USD"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 30},
            },
            "required": ["account"],
            "additionalProperties": False,
        },
    },
}


# -- valid specs -----------------------------------------------------------------------
def test_full_spec_is_accepted_unchanged():
    assert normalize_tool_spec(ACCOUNT) == ACCOUNT


def test_bare_function_form_is_normalised():
    spec = normalize_tool_spec({"name": "ping", "parameters": {"type": "object", "properties": {}}})
    assert spec["type"] == "function"
    assert spec["function"]["name"] == "ping" and spec["function"]["description"] == ""


def test_missing_parameters_default_to_an_empty_object():
    spec = normalize_tool_spec({"type": "function", "function": {"name": "now", "description": "time"}})
    assert spec["function"]["parameters"] == {"type": "object", "properties": {}}


def test_normalising_does_not_mutate_the_input():
    raw = {"type": "function", "function": {"name": "now"}}
    normalize_tool_spec(raw)
    assert raw == {"type": "function", "function": {"name": "now"}}


def test_local_refs_are_allowed():
    params = {
        "type": "object",
        "$defs": {"sku": {"type": "string", "minLength": 3}},
        "properties": {"sku": {"$ref": "#/$defs/sku"}},
    }
    spec = normalize_tool_spec({"name": "stock", "parameters": params})
    assert "is too short" in ArgumentValidator([spec]).check("stock", {"sku": "x"})


# -- invalid specs: a clear message naming the problem ---------------------------------
@pytest.mark.parametrize(
    "spec, fragments",
    [
        ("not a dict", ["must be a dict"]),
        ({"type": "function"}, ["'function' is a required property"]),
        ({"type": "tool", "function": {"name": "a"}}, ["at type", "'function' was expected"]),
        ({"type": "function", "function": {"description": "x"}}, ["'name' is a required property"]),
        ({"name": "has space"}, ["function/name", "does not match"]),
        ({"name": "a", "parameters": {"type": "objekt"}}, ["tool 'a'", "not a valid JSON Schema", "type"]),
        ({"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": 5}}}},
         ["tool 'a'", "properties/x/type"]),
        ({"name": "a", "parameters": {"type": "object", "required": "x"}}, ["tool 'a'", "required"]),
        ({"name": "a", "parameters": {"type": "object", "properties": {"x": {"minimum": "low"}}}},
         ["properties/x/minimum"]),
        ({"name": "a", "parameters": {"type": "array", "items": {}}}, ["must describe an object"]),
        ({"name": "a", "parameters": "object"}, ["function/parameters", "not of type 'object'"]),
        ({"name": "a", "parameters": {"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}}},
         ["remote reference", "properties/x/$ref"]),
        ({"name": "a", "parameters": {"type": "object", "properties": {"x": {"$ref": "#/$defs/nope"}}}},
         ["points to nothing"]),
    ],
)
def test_invalid_specs_are_rejected_with_a_named_problem(spec, fragments):
    with pytest.raises(ToolSpecError) as info:
        normalize_tool_spec(spec)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert info.value.stage == "tool_specs"
    assert isinstance(info.value, EnvProgramError)


def test_validate_tool_specs_list_rules():
    assert validate_tool_specs(None) == []
    assert len(validate_tool_specs([ACCOUNT], implemented={"get_balance"})) == 1
    with pytest.raises(ToolSpecError, match="must return a list"):
        validate_tool_specs({"name": "a"})
    with pytest.raises(ToolSpecError, match="declared twice"):
        validate_tool_specs([ACCOUNT, ACCOUNT])
    with pytest.raises(ToolSpecError, match=r"no method tool_get_balance\(\)"):
        validate_tool_specs([ACCOUNT], implemented={"other"})


# -- argument validation ---------------------------------------------------------------
@pytest.fixture()
def validator() -> ArgumentValidator:
    return ArgumentValidator(validate_tool_specs([ACCOUNT, {"name": "ping"}]))


def test_valid_arguments_pass(validator):
    assert validator.names == ["get_balance", "ping"]
    assert validator.check("get_balance", {"account": "AC-12345"}) is None
    assert validator.check("get_balance", {"account": "AC-12345", "currency": "EUR", "days": 30}) is None
    assert validator.check("ping", {}) is None


@pytest.mark.parametrize(
    "arguments, fragments",
    [
        ({}, ["'account' is a required property"]),
        ({"account": 12345}, ["at 'account'", "is not of type 'string'"]),
        ({"account": "AC-1"}, ["at 'account'", "does not match"]),
        ({"account": "AC-12345", "currency": "GBP"}, ["at 'currency'", "is not one of"]),
        ({"account": "AC-12345", "days": 0}, ["at 'days'", "less than the minimum"]),
        ({"account": "AC-12345", "days": 2.5}, ["at 'days'", "not of type 'integer'"]),
        ({"account": "AC-12345", "extra": 1}, ["Additional properties", "'extra'"]),
    ],
)
def test_violations_are_named(validator, arguments, fragments):
    message = validator.check("get_balance", arguments)
    assert message is not None and message.startswith("Error:")
    assert "get_balance" in message and "not run" in message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_unknown_tool_and_non_object_arguments(validator):
    message = validator.check("delete_everything", {})
    assert "unknown tool 'delete_everything'" in message and "get_balance, ping" in message
    assert "must be a JSON object" in validator.check("ping", [1, 2])


def test_check_never_raises_on_unusable_schema():
    # an anchor reference passes the meta-schema but cannot be resolved at call time
    spec = normalize_tool_spec({"name": "a", "parameters": {"type": "object", "properties": {"x": {"$ref": "#nowhere"}}}})
    message = ArgumentValidator([spec]).check("a", {"x": 1})
    assert message is not None and "cannot be checked" in message


# -- the runtime validates before a program's own step sees a call ---------------------
GATED = '''
class CounterEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.calls = 0
        self.reset()

    def reset(self, seed=None):
        return "count", {}

    def get_tools(self):
        return [{"type": "function", "function": {"name": "add", "description": "add n",
                 "parameters": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}},
                                "required": ["n"]}}}]

    def tool_add(self, n):
        return str(n)

    def step(self, action):
        self.calls += 1
        return "ran", 0.0, False, False, {}

    def solution(self):
        return "1"
'''


def test_runtime_gate_blocks_invalid_calls_before_the_program_runs():
    session = InProcessRuntime().open(GATED)
    assert [t["function"]["name"] for t in session.tools] == ["add"]
    obs, reward, terminated, truncated, info = session.step('<tool_call>{"name": "add", "arguments": {"n": 99}}</tool_call>')
    assert "at 'n'" in obs and "maximum" in obs and reward == 0.0 and info["tool_error"] == obs
    obs, *_ = session.step('<tool_call>{"name": "add", "arguments": {n: 1}}</tool_call>')
    assert "not valid JSON" in obs
    assert session.snapshot()["calls"] == 0  # the program never ran
    obs, *_ = session.step('<tool_call>{"name": "add", "arguments": {"n": 3}}</tool_call>')
    assert obs == "ran" and session.snapshot()["calls"] == 1


def test_python_type_names_are_mapped_with_a_note():
    # SPADE's loader never checks schemas; its designers write "int", "str"
    session = InProcessRuntime().open(GATED.replace('"type": "integer"', '"type": "int"'))
    params = session.tools[0]["function"]["parameters"]
    assert params["properties"]["n"]["type"] == "integer"
    assert "int->integer" in params["$comment"]
    obs, *_ = session.step('<tool_call>{"name": "add", "arguments": {"n": "x"}}</tool_call>')
    assert "integer" in obs and session.snapshot()["calls"] == 0  # still schema-checked


def test_runtime_rejects_a_program_with_an_invalid_tool_schema():
    bad = GATED.replace('"type": "integer"', '"type": "integr"')
    with pytest.raises(ToolSpecError, match="properties/n/type"):
        InProcessRuntime().open(bad)


CHANGING = GATED.replace('''    def get_tools(self):
        return [''', '''    def get_tools(self):
        if self._bad:
            return [{"type": "function", "function": {"name": "add", "parameters": {"type": "integr"}}}]
        return [''').replace('''    def reset(self, seed=None):
        return "count", {}''', '''    def reset(self, seed=None):
        self._bad = seed == 13
        self._limit = 9 if seed is None or seed < 100 else 99
        return "count", {}''').replace('"maximum": 9', '"maximum": self._limit')


def test_tool_specs_are_validated_again_only_when_the_program_returns_other_ones(monkeypatch):
    import spade_envs.runtime as runtime_mod

    calls = []
    real = runtime_mod.validate_tool_specs
    monkeypatch.setattr(runtime_mod, "validate_tool_specs", lambda *a, **k: calls.append(1) or real(*a, **k))
    session = InProcessRuntime().open(CHANGING)
    for seed in (0, 1, 2):
        session.reset(seed)
    assert len(calls) == 1  # the same specs on every reset: validated once
    call = '<tool_call>{"name": "add", "arguments": {"n": 50}}</tool_call>'
    assert "maximum" in session.step(call)[0]
    session.reset(100)  # other specs: validated, and the new gate applies
    assert len(calls) == 2 and session.tools[0]["function"]["parameters"]["properties"]["n"]["maximum"] == 99
    assert session.step(call)[0] == "ran"
    with pytest.raises(EnvProgramError, match="integr"):
        session.reset(13)  # invalid specs are refused, cached or not
