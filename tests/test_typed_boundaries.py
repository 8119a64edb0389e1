"""Failures cross module boundaries as types, not message text (issue 28).

- an episode's ``error`` is an :class:`EnvFailure` whose ``kind`` says what happened, so
  self-play tells a step timeout from an ordinary error without reading the message;
- a quarantined id raises :class:`QuarantinedError` (an :class:`UnknownEnvironmentError`),
  and the store lookup lets it through whatever its message says.
"""

from __future__ import annotations

import json
import pickle

import pytest
from registry_helpers import spade_home, synthetic_source  # noqa: F401

from spade_envs.agents import envloop
from spade_envs.agents.api import PlayTask
from spade_envs.errors import EnvFailure, FailureKind, QuarantinedError, UnknownEnvironmentError
from spade_envs.selfplay.rewards import is_step_timeout

LOOPING = '''
class LoopEnv:
    def reset(self, seed=None):
        return "say anything", {}

    def step(self, action):
        while True:
            pass
'''


def test_env_failure_is_its_message_with_a_kind():
    failure = EnvFailure("timeout", "step() overran its deadline")
    assert failure == "step() overran its deadline" and failure.kind is FailureKind.TIMEOUT
    assert json.loads(json.dumps({"error": failure})) == {"error": "step() overran its deadline"}
    assert pickle.loads(pickle.dumps(failure)).kind is FailureKind.TIMEOUT
    assert EnvFailure("no such kind", "x").kind is FailureKind.ERROR


def test_a_step_timeout_is_told_by_its_kind_not_its_text():
    from spade_envs.gym_env import SpadeEnv
    from spade_envs.sandbox import SandboxRuntime

    runtime = SandboxRuntime(step_timeout_s=1.0, max_workers=1)
    env = SpadeEnv(source=LOOPING, runtime=runtime)
    try:
        env.reset(seed=0)
        (outcome,) = envloop.step_batch([env], ["go"])
    finally:
        env.close()
        runtime.close()
    assert isinstance(outcome.error, EnvFailure) and outcome.error.kind is FailureKind.TIMEOUT

    class Episode:  # what self-play reads: only the kind counts
        error = EnvFailure("timeout", "anything at all")

    assert is_step_timeout(Episode())
    Episode.error = EnvFailure("error", "the word timeout in a program's own message")
    assert not is_step_timeout(Episode())


def test_open_failure_has_the_open_kind():
    env, _, _, failure = envloop.start(PlayTask(env_id="spade/Env-09999", seed=0))
    assert env is None and isinstance(failure, EnvFailure) and failure.kind is FailureKind.OPEN


def test_quarantined_id_raises_its_own_type(spade_home):  # noqa: F811
    from spade_envs.registry import store_lookup
    from spade_envs.registry.catalog import resolve
    from spade_envs.registry.ids import parse_env_id
    from spade_envs.registry.store import Registry

    reg = Registry.open()
    added = reg.add(synthetic_source(0), filename="e.py")
    reg.set_status(added.env_id, "quarantined", "found wanting")
    reg.close()
    with pytest.raises(QuarantinedError) as caught:
        resolve(str(added.env_id.base))
    assert isinstance(caught.value, UnknownEnvironmentError)
    with pytest.raises(QuarantinedError):
        store_lookup(parse_env_id(str(added.env_id.base)))
