"""PARAMETERS: static reading, schema checks, kwargs validation on every entry point,
sampling, and the acceptance ``parameters`` stage."""

from __future__ import annotations

import pytest

from spade_envs.designer.acceptance import validate_source
from spade_envs.errors import SpadeError
from spade_envs.gym_env import SpadeEnv
from spade_envs.parameters import (
    InvalidParametersError,
    ParametersSchemaError,
    check_schema,
    defaults,
    read_parameters,
    resolve_kwargs,
    sample_points,
)

SRC = '''
import re
PARAMETERS = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2, "description": "size"},
        "mode": {"enum": ["a", "b"], "default": "a", "description": "flavour"},
    },
}


class TinyEnv:
    def __init__(self, n=2, mode="a", **kwargs):
        self.n, self.mode = n, mode
        self.reset()

    def reset(self, seed=None):
        self._a = (seed or 0) % 7 + 100 * self.n
        return f"Find the number (size {self.n}, mode {self.mode}).", {}

    def step(self, action):
        m = re.search(r"\\\\boxed\\{(\\d+)\\}", action)
        won = bool(m) and int(m.group(1)) == self._a and action.count("boxed") == 1
        return "done", float(won), True, False, {}

    def solution(self):
        return str(self._a)
'''


def test_read_parameters_is_static_and_checked() -> None:
    schema = read_parameters(SRC)
    assert check_schema(schema) is schema
    assert defaults(schema) == {"n": 2, "mode": "a"}
    assert read_parameters("class XEnv: pass\n") is None
    # never executed: a call in the declaration is refused, not run
    with pytest.raises(ParametersSchemaError, match="literal"):
        read_parameters("PARAMETERS = dict(type='object')\n")


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        ({"type": "object", "properties": {"n": {"type": "intger", "default": 1}}}, "not a valid JSON Schema"),
        ({"type": "array"}, '"type": "object"'),
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, "needs a 'default'"),
        ({"type": "object", "properties": {"n": {"type": "integer", "maximum": 3, "default": 9}}}, "defaults are invalid"),
        ({"type": "object", "properties": {"hint": {"type": "boolean", "default": False}}}, "reserved"),
    ],
)
def test_bad_schemas_name_the_problem(schema: dict, needle: str) -> None:
    with pytest.raises(ParametersSchemaError, match=needle):
        check_schema(schema)


def test_sampling_is_deterministic_and_valid() -> None:
    schema = read_parameters(SRC)
    a, b = sample_points(schema, 3, seed=0), sample_points(schema, 3, seed=0)
    assert a == b and len(a) == 3
    assert a[0] == {"n": 1, "mode": "a"}  # the low corner first
    assert defaults(schema) not in a
    for point in a:
        assert resolve_kwargs(SRC, point) == point


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"n": 9}, "n"), ({"n": "3"}, "n"), ({"mode": "c"}, "mode"), ({"size": 3}, "size")],
)
def test_invalid_kwargs_one_clear_error(kwargs: dict, name: str) -> None:
    for make in (
        lambda: SpadeEnv(source=SRC, trust_remote_code=True, **kwargs),  # in-process runtime
        lambda: SpadeEnv(source=SRC, env_kwargs=kwargs),  # the sandbox
    ):
        with pytest.raises(InvalidParametersError) as info:
            make()
        assert info.value.name == name and name in str(info.value)
        assert isinstance(info.value, SpadeError)


def test_valid_kwargs_reach_the_constructor_in_both_runtimes() -> None:
    for env in (SpadeEnv(source=SRC, trust_remote_code=True, n=4, mode="b"), SpadeEnv(source=SRC, n=4, mode="b")):
        obs, _ = env.reset(seed=3)
        assert "size 4, mode b" in obs
        assert env.solution() == "\\boxed{403}"
        env.close()


def test_program_without_parameters_passes_kwargs_through() -> None:
    plain = SRC.split("class TinyEnv")[0].split("PARAMETERS")[0] + "class TinyEnv" + SRC.split("class TinyEnv")[1]
    env = SpadeEnv(source=plain, trust_remote_code=True, n=5, anything=1)
    assert "size 5" in env.reset(seed=0)[0]


def test_acceptance_runs_at_defaults_and_sampled_points() -> None:
    report = validate_source(SRC, trust_remote_code=True)
    assert report.accepted, report.summary()
    assert report.stages[-1].name == "parameters" and '{"mode":"a","n":1}' in report.stages[-1].detail
    # broken only away from the defaults: the sampled low corner catches it
    broken = SRC.replace("(seed or 0) % 7", "((seed or 0) % 7 if self.n > 1 else 0)")
    report = validate_source(broken, trust_remote_code=True)
    assert not report.accepted and report.rejected_at == "parameters"
    assert "seed_variety" in report.stages[-1].detail
    bad = SRC.replace('"default": 2', '"default": 7')
    report = validate_source(bad, trust_remote_code=True)
    assert report.rejected_at == "parameters" and "defaults are invalid" in report.failure.detail
    assert report.to_json()["accepted"] is False
