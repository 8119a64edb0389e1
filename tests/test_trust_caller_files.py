"""Attacks of issue 40 on what the caller does with others' files (points 1, 7, 8, 12): a
pickled ``EnvSpec`` naming ``subprocess:run``, a replay of slow steps, a forged
``entries.partial.jsonl`` (injected results, a ``<script>`` in the transcript), a skill
named ``$\\foo$`` in the plots, and ``results.json`` files with terminal sequences, raw
HTML, wrong shapes or 100,000 ``[``. Each ends in a verdict or one clear error; the
outputs hold the text, escaped.

The tests that open a program run with the static layer on and off.
"""

from __future__ import annotations

import copyreg
import json
import pickle
import time
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.envs.registration import EnvSpec

from spade_envs.cli.main import main
from spade_envs.evals import report
from spade_envs.evals.partial_results import FILENAME, PartialResults
from spade_envs.gym_env import EnvUnpicklingError, SpadeEnv


@pytest.fixture(params=["static-on", "static-off"])
def static_layer(request, monkeypatch):
    monkeypatch.setenv("SPADE_SANDBOX_STATIC", "1" if request.param == "static-on" else "0")


class _Forged:
    def __init__(self, state: dict) -> None:
        self.state = state

    def __reduce__(self):
        return copyreg._reconstructor, (SpadeEnv, object, None), self.state


# -- point 1: a pickled spec never names code ------------------------------------------------
def test_a_pickled_spec_naming_a_command_is_rebuilt_from_the_receivers_registry(tmp_path):
    marker = tmp_path / "pwned"
    env = gym.make("spade/Env-00001-v0")
    state = env.unwrapped.__getstate__()
    env.close()
    state["spec"] = EnvSpec("spade/Env-00001-v0", entry_point="subprocess:run",
                            kwargs={"args": ["touch", str(marker)]},
                            additional_wrappers=())
    got = pickle.loads(pickle.dumps(_Forged(state)))
    try:
        assert got.spec.entry_point == "spade_envs.gym_env:SpadeEnv"
        assert got.spec.kwargs == {"env_id": "spade/Env-00001", "version": 0}
        again = gym.make(got.spec)
        assert isinstance(again.unwrapped, SpadeEnv) and not marker.exists()
        again.close()
    finally:
        got.close()


def test_a_normal_pickle_keeps_a_working_spec():
    env = gym.make("spade/Env-00001-v0")
    env.reset(seed=1)
    got = pickle.loads(pickle.dumps(env))
    try:
        assert got.unwrapped.spec.id == "spade/Env-00001-v0"
        assert gym.make(got.unwrapped.spec).unwrapped.env_id == "spade/Env-00001"
    finally:
        got.close()
        env.close()


# -- point 12: replay bounded in time --------------------------------------------------------
SLOW = '''
class SlowEnv:
    def __init__(self, **kwargs):
        self.turn = 0

    def reset(self, seed=None):
        self.turn = 0
        return "go", {}

    def step(self, action):
        for _ in range(2_000_000):  # about 0.1 s of work per step
            self.turn += 0
        self.turn += 1
        return "t", 0.0, False, False, {}
'''


def test_replay_on_unpickling_is_bounded_in_time(static_layer, monkeypatch):
    import spade_envs.gym_env as ge

    monkeypatch.setattr(ge, "MAX_REPLAY_S", 1.0)
    state = {"init": {"env_id": None, "version": None, "source": SLOW, "hint": False, "render_mode": None,
                      "env_kwargs": {}, "opponent": "scripted", "seat": 0},
             "seed": 0, "started": True, "actions": ["a"] * 512, "use_hint": False, "rng": None, "spec": None}
    t0 = time.monotonic()
    with pytest.raises(EnvUnpicklingError, match="longer than 1 s"):
        pickle.loads(pickle.dumps(_Forged(state)))
    assert time.monotonic() - t0 < 15  # 512 steps of ~0.1 s: about a minute before


# -- point 7: resume rows ------------------------------------------------------------------
def _run(out: Path, *extra: str) -> int:
    return main(["eval", "--suite", "registry", "--agent", "replay:reference", "--limit", "2", "--no-progress",
                 "--out", str(out), "--json", *extra])


def _interrupted_run(out: Path, monkeypatch) -> dict:
    """A finished registry run whose partial file is kept (as if interrupted at the end)."""
    monkeypatch.setattr(PartialResults, "finish", PartialResults.close)
    assert _run(out) == 0
    monkeypatch.undo()
    header, rows = PartialResults(out).read()
    assert header is not None and len(rows) == 2
    return rows


def test_a_forged_resume_file_cannot_inject_results_or_script(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    rows = _interrupted_run(out, monkeypatch)
    capsys.readouterr()
    (k1, r1), (k2, r2) = rows.items()
    forged_win = {**r1, "passed": True, "return": 1.0, "why": "",
                  "transcript": {**r1["transcript"], "actions": ["\\boxed{surely wrong}"]}}
    forged_html = {**r2, "passed": False, "why": "<script>alert(1)</script>",
                   "transcript": {**r2["transcript"], "terminated": "<script>alert(2)</script>"}}
    lines = (out / FILENAME).read_text(encoding="utf-8").splitlines()[:1]
    lines += [json.dumps({"key": k1, "row": forged_win}), json.dumps({"key": k2, "row": forged_html})]
    (out / FILENAME).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _run(out, "--resume") == 0
    captured = capsys.readouterr()
    assert "refused" in captured.err and k2 in captured.err
    results = json.loads((out / "results.json").read_text())
    by_key = {f"{e['id']}#{e['seed']}": e for e in results["entries"]}
    assert by_key[k1]["passed"] is False  # recomputed from its actions, not taken from the file
    assert by_key[k1]["transcript"]["actions"] == ["\\boxed{surely wrong}"]
    assert by_key[k2]["passed"] is True  # refused, so played again
    page = (out / "report.html").read_text()
    assert "<script" not in page


def test_resume_rows_of_the_wrong_shape_are_refused():
    from spade_envs.evals.resume_rows import checked

    refused: list[tuple[str, str]] = []
    rows = {"g|random|0|0": {"id": "g", "opponent": "random", "seed": 0, "model_seat": 0, "outcome": "win",
                             "returns": [-1.0, 1.0]},
            "g|random|1|0": {"id": "g", "opponent": "random", "seed": 1, "model_seat": 0, "outcome": "win",
                             "passed": False, "returns": [1.0, -1.0]},
            "g|random|2|0": {"id": "g", "opponent": "scripted", "seed": 2, "model_seat": 0, "outcome": "loss",
                             "returns": [0.0]},
            "g|random|3|0": {"id": "g", "opponent": "random", "seed": 3, "model_seat": 0, "outcome": "<b>",
                             "returns": []},
            "g|random|4|0": [1, 2]}
    kept = checked("games", rows, refused=lambda k, why: refused.append((k, why)))
    assert list(kept) == ["g|random|1|0"] and kept["g|random|1|0"]["passed"] is True
    assert sorted(k for k, _ in refused) == ["g|random|0|0", "g|random|2|0", "g|random|3|0", "g|random|4|0"]
    assert checked("registry", {"x#0": {"id": "x", "seed": 0, "transcript": {"actions": []}}}, records=[]) == {}


# -- point 7/8/12: reports ------------------------------------------------------------------
def _results(**over) -> dict:
    entries = [{"id": "spade/Env-00001-v0", "seed": 0, "passed": False, "skill": "$\\foo$", "generation": 0,
                "why": "<img src=x onerror=alert(1)>", "transcript": {
                    "messages": [{"role": "<b>user</b>", "content": "</pre><script>alert(3)</script>"}],
                    "rewards": ["<script>"], "terminated": "<script>alert(4)</script>", "truncated": False}}]
    summary = {"success": {"rate": 0.0, "ci95": [0.0, 0.5], "n": 1},
               "per_skill": {"$\\foo$": {"success": {"rate": 0.0, "ci95": [0.0, 0.5], "n": 1}},
                             "$x^{$": {"success": {"rate": 0.0, "ci95": [0.0, 0.5], "n": 1}}},
               "per_generation": {"0": {"success": {"rate": 0.0, "ci95": [0.0, 0.5], "n": 1}}}}
    return report.build_results("registry", "<script>alert(5)</script>", entries, summary,
                                run="\x1b[32mACCEPTED\x1b[0m<b>|run</b>", **over)


def test_the_report_escapes_everything_and_plots_names_as_text(tmp_path):
    res = _results()
    page = report.html_report(res)
    assert "<script" not in page and "<img src=x" not in page and "<b>user" not in page and "<b>|run" not in page
    assert "&lt;script&gt;alert(4)&lt;/script&gt;" in page and "onerror" in page  # shown, as text
    assert page.count('src="data:image/png;base64,') == 3  # the $\foo$ skill plotted (mathtext crashed)
    paths = report.write_report(res, tmp_path / "rep")
    md = Path(paths["markdown"]).read_text()
    assert "\x1b" not in md and "<b>" not in md and "<script" not in md and "\\|run" in md


def test_spade_leaderboard_strips_terminal_sequences(tmp_path, capsys):
    report.write_report(_results(), tmp_path / "a")
    assert main(["leaderboard", str(tmp_path / "a"), "--out", str(tmp_path / "board")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "ACCEPTED" in out and "<script" not in out
    page = (tmp_path / "board" / "leaderboard.html").read_text()
    assert "<script" not in page and "\x1b" not in page and "&lt;script" in page


@pytest.mark.parametrize("content", [
    "[" * 100_000,
    json.dumps({"suite": "registry", "agent": "a", "summary": {"state_ok": {"rate": "x", "ci95": [0, 1], "n": 1}},
                "entries": []}),
    json.dumps({"suite": "registry", "agent": ["a"], "summary": {}, "entries": []}),
    json.dumps({"suite": "registry", "agent": "a", "summary": {}, "entries": [1, 2]}),
    json.dumps({"suite": "registry", "agent": "a", "summary": {"per_skill": {"s": {"success": 3}}}, "entries": []}),
])
def test_a_malformed_results_file_is_one_clear_error(tmp_path, capsys, content):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.json").write_text(content)
    rc = main(["leaderboard", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc != 0 and "not a spade eval results file" in err and "Traceback" not in err
