"""The acceptance package's own structure: its entry points, its stage lists, its names."""

from spade_envs.designer import acceptance


def test_no_reference_text_matches_what_the_registry_reads_from_old_entries():
    from spade_envs.registry.verification import STORED_NO_REFERENCE, is_verified

    assert acceptance.NO_REFERENCE == STORED_NO_REFERENCE
    old = {"acceptance": [{"name": "solution_replay", "ok": True, "detail": acceptance.NO_REFERENCE}]}
    assert not is_verified(old)


import ast
import dataclasses
import pathlib

import pytest

from spade_envs.designer.acceptance import (
    GAME_CHECKS,
    GAME_STAGES,
    SINGLE_PLAYER_CHECKS,
    STAGES,
    AcceptanceConfig,
    AcceptanceReport,
    Stage,
    StageCheck,
    StageVerdict,
)
from spade_envs.designer.acceptance.context import Context
from spade_envs.designer.acceptance.parameters import POINTS, ParameterSampling
from spade_envs.designer.acceptance.runner import Novelty, SizeSyntax, run_stages
from spade_envs.errors import EnvProgramError
from spade_envs.program import parse_source


def test_the_stage_lists_are_the_design_order_of_stage_objects():
    assert [str(s) for s in STAGES] == ["size_syntax", "compile", "interface", "tool_specs", "smoke", "determinism",
                                        "seed_variety", "solution_replay", "garbage", "no_leak", "novelty"]
    assert [str(s) for s in GAME_STAGES] == ["size_syntax", "compile", "interface", "smoke", "determinism",
                                             "random_play", "scripted_play", "garbage", "information", "novelty"]
    fields = {f.name for f in dataclasses.fields(AcceptanceConfig)}
    for check in (*SINGLE_PLAYER_CHECKS, *GAME_CHECKS):
        assert isinstance(check, StageCheck) and isinstance(check.name, Stage)
        assert set(check.settings) <= fields, (check.name, check.settings)


def _ctx(source: str) -> Context:
    return Context(source, "x.py", AcceptanceConfig(), runtime_of=lambda: None)  # type: ignore[arg-type,return-value]


class _Raises(StageCheck):
    name = Stage.COMPILE

    def __init__(self, stage: object) -> None:
        self.stage = stage

    def check(self, ctx: Context) -> str:
        raise EnvProgramError("found early", stage=self.stage)  # type: ignore[arg-type]


class _Fine(StageCheck):
    def __init__(self, name: Stage) -> None:
        self.name = name  # type: ignore[misc]

    def check(self, ctx: Context) -> str:
        return "fine"


def test_a_new_stage_is_one_object_in_a_list_and_later_stage_errors_wait_for_their_stage():
    class Counts(StageCheck):  # a new stage: one object, one list entry
        name = Stage.SMOKE

        def check(self, ctx: Context) -> str:
            return f"{len(ctx.source)} characters"

    report = run_stages([SizeSyntax(), Counts(), Novelty()], _ctx("x = 1\n"), AcceptanceReport())
    assert report.accepted and [v.name for v in report.stages] == ["size_syntax", "smoke", "novelty"]
    assert report.stage("smoke").detail == "6 characters"
    # an EnvProgramError naming a later stage of the list is that stage's verdict
    report = run_stages([SizeSyntax(), _Raises(Stage.NOVELTY), _Fine(Stage.SMOKE), Novelty()], _ctx("x = 1\n"),
                        AcceptanceReport())
    assert report.rejected_at == Stage.NOVELTY and report.failure.detail == "found early"
    assert report.to_json()["rejected_at"] == "novelty" and type(report.to_json()["rejected_at"]) is str
    # one naming no stage of the list (the sandbox policy's label) fails the stage that runs
    report = run_stages([SizeSyntax(), _Raises("sandbox_compile"), Novelty()], _ctx("x = 1\n"), AcceptanceReport())
    assert report.rejected_at == "compile"


def test_a_stage_that_crashes_is_a_failed_verdict_never_an_exception():
    class Buggy(StageCheck):
        name = Stage.SMOKE

        def check(self, ctx: Context) -> str:
            raise KeyError("bug")

    report = run_stages([SizeSyntax(), Buggy()], _ctx("x = 1\n"), AcceptanceReport())
    assert report.rejected_at == "smoke" and "internal error" in report.failure.detail
    report = run_stages([SizeSyntax()], _ctx("def (:\n"), AcceptanceReport())
    assert report.rejected_at == "size_syntax" and "syntax error" in report.failure.detail


def test_format_errors_name_a_stage_of_the_enum():
    with pytest.raises(EnvProgramError) as info:
        parse_source("def (:\n", "x.py")
    assert info.value.stage is Stage.SIZE_SYNTAX
    assert Stage.named("size_syntax") is Stage.SIZE_SYNTAX and Stage.named("sandbox_compile") is None
    assert StageVerdict(Stage.COMPILE, True, "").to_json()["name"] == "compile"


PARAMETRIC = '''
PARAMETERS = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3}}}
class CountEnv:
    def reset(self, seed=None):
        return "start", {}
    def step(self, action):
        return "done", 1.0, True, False, {}
'''


class _Recording:
    """A pipeline that records the configs it is run under."""

    def __init__(self) -> None:
        self.config = AcceptanceConfig()
        self.runs: list[AcceptanceConfig] = []

    def run(self, source, filename="<env>", config=None):
        self.runs.append(config or self.config)
        return AcceptanceReport(filename, [StageVerdict(Stage.SIZE_SYNTAX, True, "ok")], expected=(Stage.SIZE_SYNTAX,))


def test_parameter_sampling_wraps_one_pipeline_and_runs_it_at_each_point():
    inner = _Recording()
    report = ParameterSampling(inner).run(PARAMETRIC, "count.py")
    assert report.accepted and report.stages[-1].name == Stage.PARAMETERS, report.summary()
    assert len(inner.runs) == 1 + POINTS and inner.runs[0].env_kwargs == {"n": 3}
    assert all(c.novelty_check is None for c in inner.runs[1:])
    # without PARAMETERS the wrapped report is returned unchanged
    plain = ParameterSampling(inner).run("x = 1\n")
    assert [v.name for v in plain.stages] == ["size_syntax"] and plain.expected == (Stage.SIZE_SYNTAX,)
    # a bad schema is one failed parameters verdict, nothing else runs
    inner.runs.clear()
    bad = ParameterSampling(inner).run(PARAMETRIC.replace('"default": 3', '"default": 30'), "count.py")
    assert bad.rejected_at == "parameters" and not bad.accepted and inner.runs == []


def test_the_package_has_no_import_cycle():
    import spade_envs.designer.acceptance as acceptance

    root = pathlib.Path(acceptance.__path__[0])
    edges = {}
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        edges[path.stem] = {n.module for n in ast.walk(tree)
                            if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module}
    state: dict[str, int] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        assert state.get(name) != 1, f"import cycle: {' -> '.join(chain + (name,))}"
        if state.get(name) == 2:
            return
        state[name] = 1
        for dep in edges.get(name, ()):
            visit(dep, chain + (name,))
        state[name] = 2

    for name in edges:
        visit(name, ())
    assert "pipeline" not in edges["runner"] | edges["single_player_stages"] | edges["game_stages"]


def test_compile_stage_says_the_same_for_games_and_single_player_programs() -> None:
    """One compile check (``runner.compile_or_reject``): a compile-time error that parses
    (``return`` at module level) fails COMPILE with the message and line, in both lists."""
    from spade_envs.designer.acceptance import AcceptancePipeline
    from spade_envs.games import is_multiplayer
    from spade_envs.registry.catalog import seed_records

    recs = seed_records()
    game = next(r for r in recs if is_multiplayer(r))
    single = next(r for r in recs if not is_multiplayer(r))
    pipeline = AcceptancePipeline()
    for rec in (game, single):
        source = rec.source + "\nreturn 1\n"
        report = pipeline.run(source)
        line = source.count("\n")
        assert report.rejected_at == "compile"
        assert [v.detail for v in report.stages if not v.ok] == [
            f"does not compile: 'return' outside function (line {line})"]
