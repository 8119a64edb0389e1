"""The game transport cannot be subverted by the game it carries.

A game runs next to its transport (same program, same globals). A hostile game rebinds
every name the transport uses (json, the helper factory, builtins, the transport class's
own ``step``); the transport must keep answering correctly, and any reply that is not
the transport's shape fails only that session with an EnvProgramError (never a
TypeError or AttributeError in the caller).
"""

from __future__ import annotations

import pytest

from spade_envs.errors import EnvProgramError, SpadeError
from spade_envs.games import inspect_game, open_game
from spade_envs.games.runtime import MultiPlayerSession

HOSTILE = '''
METADATA = {"name": "Rebinder", "skill": "multi-agent game", "num_players": 2, "tags": ["zero-sum"]}


class _FakeJson:
    @staticmethod
    def dumps(value, default=None):
        return "[1, 2, 3]"

    @staticmethod
    def loads(text):
        return 42


def _fake(*args, **kwargs):
    return "[]"


class RebindEnv:
    num_players = 2

    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self._turn = 0
        self._player = 0
        return self.observe(0), {}

    def current_player(self):
        return self._player

    def observe(self, player):
        return f"turn {self._turn}, player {player}"

    def scripted_action(self, player=None):
        return "\\\\boxed{1}"

    def solution(self):
        return self.scripted_action()

    def legal_actions(self, player=None):
        return ["\\\\boxed{1}"]

    def _attack(self):
        global _spade_transport_json, _spade_transport_make, _spade_transport_error, _spade_json, _spade_plain
        global isinstance, repr, hasattr, getattr, json
        _spade_transport_json = _spade_json = _FakeJson
        _spade_plain = _fake
        _spade_transport_make = _fake
        _spade_transport_error = _fake
        isinstance = _fake
        repr = _fake
        hasattr = _fake
        getattr = _fake
        json = _FakeJson
        try:
            SpadeGameTransportEnv.step = lambda self, action: ("[1, 2]", 0.0, False, False, {})
        except Exception:
            pass

    def step(self, action):
        self._attack()
        self._turn += 1
        self._player = 1 - self._player
        done = self._turn >= self.max_turns
        return self.observe(self._player), [0.0, 0.0], done, False, {"turn": self._turn}
'''


@pytest.mark.parametrize("trusted", [True, False], ids=["in-process", "sandbox"])
def test_rebinding_the_transport_names_changes_nothing(trusted):
    game = open_game(source=HOSTILE, trust_remote_code=trusted)
    try:
        game.reset(3)
        for turn in range(1, 4):
            obs, rewards, terminated, truncated, info = game.step("\\boxed{1}")
            # the transport still speaks its own protocol after every rebinding
            assert obs == f"turn {turn}, player {turn % 2}" and rewards == [0.0, 0.0]
            assert info == {"turn": turn} and game.current_player == turn % 2
            assert game.legal_actions() == ["\\boxed{1}"] and game.scripted_action() == "\\boxed{1}"
    finally:
        game.close()


class _StubSession:
    def __init__(self, replies):
        self.replies = list(replies)

    def step(self, action):
        return self.replies.pop(0), 0.0, False, False, {}

    def close(self):
        pass


GOOD_STATE = '{"tuple": false, "value": null, "state": {"num_players": 2, "simultaneous": false, ' \
             '"current_player": 0, "views": ["a", "b"]}}'


@pytest.mark.parametrize("reply", [
    "[1, 2]", "42", '"text"', "null", "{not json", '{"tuple": "yes", "value": 1}',
    '{"tuple": false, "value": null, "state": 7}',
    '{"tuple": false, "value": null, "state": {"num_players": true}}',
    '{"tuple": false, "value": null, "state": {"num_players": 2, "simultaneous": 1, "views": ["a", "b"]}}',
    '{"tuple": false, "value": null, "state": {"num_players": 2, "simultaneous": false, '
    '"current_player": 5, "views": ["a", "b"]}}',
    '{"tuple": false, "value": null, "state": {"num_players": 2, "simultaneous": false, '
    '"current_player": 0, "views": ["a", 3]}}',
    "[" * 100_000 + "]" * 100_000,
])
def test_malformed_replies_fail_the_session_with_a_spade_error(reply):
    info = inspect_game(HOSTILE)
    session = MultiPlayerSession(_StubSession([GOOD_STATE, reply]), runtime=None, info=info)  # type: ignore[arg-type]
    with pytest.raises(EnvProgramError):
        session.reset(0)


def test_a_malformed_reset_value_is_a_program_error():
    info = inspect_game(HOSTILE)
    bad_value = GOOD_STATE.replace('"value": null', '"value": [1, 2, 3]').replace('"tuple": false', '"tuple": true')
    session = MultiPlayerSession(_StubSession([GOOD_STATE, bad_value]), runtime=None, info=info)  # type: ignore[arg-type]
    with pytest.raises(SpadeError):
        session.reset(0)
