"""Multi-player acceptance: every seed game is accepted; malformed games get clear verdicts."""

from __future__ import annotations

import pytest

from spade_envs.designer.acceptance import (
    GAME_STAGES,
    AcceptanceConfig,
    AcceptancePipeline,
    AcceptanceReport,
    StagePipeline,
)
from spade_envs.games import is_multiplayer
from spade_envs.registry.catalog import resolve, seed_records

GAMES = [r for r in seed_records() if is_multiplayer(r)]
NIM = resolve("spade/Env-00025").source
GUIDE = resolve("spade/Env-00028").source


@pytest.fixture(scope="module")
def trusted():
    return StagePipeline(trust_remote_code=True)


@pytest.mark.parametrize("record", GAMES, ids=[r.metadata["file"] for r in GAMES])
def test_every_seed_game_is_accepted(trusted, record):
    report = trusted.run(record.source, record.metadata["file"])
    assert isinstance(report, AcceptanceReport)
    assert report.accepted, report.summary()
    assert [s.name for s in report.stages] == list(GAME_STAGES)
    data = report.to_json()
    assert data["accepted"] is True and data["rejected_at"] is None and data["multiplayer"] is True


def test_a_seed_game_is_accepted_in_the_sandbox():
    report = StagePipeline().run(NIM, "nim.py")
    assert report.accepted, report.summary()


def _reject(trusted, source):
    report = trusted.run(source)
    assert not report.accepted
    return report.rejected_at, report.failure.detail


def test_missing_method_is_rejected_at_interface(trusted):
    stage, detail = _reject(trusted, NIM.replace("def observe(self, player):", "def look(self, player):"))
    assert stage == "interface" and "observe()" in detail


def test_scalar_reward_is_rejected_naming_the_problem(trusted):
    bad = NIM.replace("return self.observe(self._player), rewards, False, truncated, {}",
                      "return self.observe(self._player), 0.0, False, truncated, {}")
    stage, detail = _reject(trusted, bad)
    assert stage == "interface" and "list of 2 numbers" in detail


def test_undeclared_player_count_is_rejected(trusted):
    stage, detail = _reject(trusted, NIM.replace('    "num_players": 2,\n', "", 1))
    assert stage == "interface" and "num_players" in detail


def test_game_without_turn_limit_is_rejected_at_smoke(trusted):
    bad = NIM.replace("            if self._invalid[p] > self.max_invalid:", "            if False:")
    bad = bad.replace("truncated = self._turn >= self.max_turns", "truncated = False")
    stage, detail = _reject(trusted, bad)
    assert stage == "smoke" and "did not end within" in detail


def test_scripted_baseline_that_loses_is_rejected(trusted):
    bad = NIM.replace("    def scripted_action(self, player=None):\n",
                      "    def scripted_action(self, player=None):\n        return 'resign'\n")
    stage, detail = _reject(trusted, bad)
    assert stage in ("scripted_play", "garbage") and "seat" in detail


def test_cooperative_game_whose_junk_succeeds_is_rejected(trusted):
    bad = GUIDE.replace("return self._end([0.0, 0.0], \"Too many invalid actions", "return self._end([1.0, 1.0], \"Too many invalid actions")
    stage, detail = _reject(trusted, bad)
    assert stage == "garbage" and "junk" in detail


def test_hidden_information_game_that_hides_nothing_is_rejected(trusted):
    number = resolve("spade/Env-00027").source
    bad = number.replace("    def observe(self, player):",
                         "    def observe(self, player):\n        return self._view(0)\n\n    def _view(self, player):")
    stage, detail = _reject(trusted, bad)
    assert stage == "information" and "same view" in detail


def test_raising_game_and_garbage_source_get_verdicts(trusted):
    stage, detail = _reject(trusted, NIM.replace("    def reset(self, seed=None):\n", "    def reset(self, seed=None):\n        raise ValueError('boom')\n", 1))
    assert stage == "compile" and "boom" in detail
    assert _reject(trusted, "def broken(:\n")[0] == "size_syntax"


def test_config_controls_the_scripted_threshold():
    strict = StagePipeline(AcceptanceConfig(min_scripted_score=1.01, games_per_seat=2), trust_remote_code=True)
    report = strict.run(NIM)
    assert report.rejected_at == "scripted_play"


def test_the_one_pipeline_routes_games_to_the_game_stages():
    pipeline = AcceptancePipeline(AcceptanceConfig(seeds=(4, 5)), trust_remote_code=True)
    report = pipeline.run(NIM, "nim.py")
    assert report.accepted, report.summary()
    # a game with PARAMETERS (the seeds have ladders) ends with the parameters verdict
    assert [s.name for s in report.stages if s.name != "parameters"] == list(GAME_STAGES)
    assert report.to_json()["multiplayer"] is True
    single = pipeline.run(resolve("spade/Env-00001").source, "lock.py")
    assert single.accepted and "multiplayer" not in single.to_json()
    assert "scripted_play" not in [s.name for s in single.stages]
