"""The designer step's behaviour logprobs in params mode (``DesignerRole._behaviour_logprobs``):
a backend that reports the masked distribution it sampled from (``Backend.masked_logprobs``)
has its logprobs used as they are, with no teacher-forced forward; any other backend's
completions are scored again under the schema mask. On the tiny model the two agree, so
the flag the transformers backend sets is true of what it reports."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spade_envs.selfplay.designer_bench import QUICK, arm_config


@pytest.fixture(scope="module")
def designed(tmp_path_factory):
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    cfg = arm_config(replace(QUICK, prompts=1, group=4), tmp_path_factory.mktemp("behaviour"), "trained")
    tr = SelfPlayTrainer(cfg)
    props, _ = tr._design(0)
    return tr, [p for p in props if p.completion_ids]


def test_the_flag_reaches_the_designer_through_every_wrapper(designed):
    from spade_envs.agents.api import Backend
    from spade_envs.selfplay.dist import ShardedBackend

    tr, _ = designed
    assert tr.designer.backend.masked_logprobs is True  # ShardedBackend over the policy's transformers backend
    assert Backend.masked_logprobs is False  # a backend must say so itself

    class Unmasked:
        name, tokenizer, token_level = "x", None, True

    assert ShardedBackend(Unmasked(), None).masked_logprobs is False


def test_masked_logprobs_are_used_as_sampled(designed, monkeypatch):
    from spade_envs.selfplay import trl_bridge

    tr, props = designed
    assert props and all(p.is_params and p.constrained and p.logprobs for p in props)
    calls = []
    monkeypatch.setattr(trl_bridge, "teacher_forced_logps_batch", lambda *a, **k: calls.append(a) or [])
    n = tr.config.designer_max_new_tokens
    assert tr._behaviour_logprobs(props) == [list(p.logprobs[:n]) for p in props]
    assert all(not rows for _, rows in calls)  # nothing was teacher-forced


def test_an_unflagged_backend_is_teacher_forced_and_agrees(designed, monkeypatch):
    tr, props = designed
    monkeypatch.setattr(tr.designer.backend, "masked_logprobs", False)
    n = tr.config.designer_max_new_tokens
    forced = tr._behaviour_logprobs(props)
    sampled = [list(p.logprobs[:n]) for p in props]
    assert forced != sampled  # recomputed, not copied ...
    gaps = [abs(a - b) for f, s in zip(forced, sampled) for a, b in zip(f, s)]
    assert gaps and max(gaps) < 1e-3  # ... and equal to what the backend reported, under the mask
