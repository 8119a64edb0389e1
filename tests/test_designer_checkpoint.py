"""``spade bench designer-checkpoint``: a saved designer proposes against the untrained one on
chosen parents, played by the frozen UNTRAINED agent (never the checkpoint); bad settings
are refused before any model loads (tiny random model)."""

from __future__ import annotations

import pytest

from spade_envs.selfplay.config import SelfPlayConfigError
from spade_envs.selfplay.designer_arm import weights_hash
from spade_envs.selfplay.designer_bench import QUICK


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory):
    """A 'trained' designer: the tiny random model with every weight moved, saved."""
    import torch

    from spade_envs.agents.models import load_model

    model, tokenizer = load_model("tiny-random", device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    folder = tmp_path_factory.mktemp("ckpt") / "designer"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder), weights_hash(model), weights_hash(load_model("tiny-random", device="cpu")[0])


def test_checkpoint_proposes_and_the_untrained_agent_plays(perturbed, tmp_path):
    from spade_envs.selfplay.designer_checkpoint import score_checkpoint

    folder, moved, untrained = perturbed
    result = score_checkpoint(QUICK, folder, "spade/Env-00003-v0, spade/Env-00006", tmp_path)
    assert result["parents"] == ["spade/Env-00003-v0", "spade/Env-00006-v0"]
    s = result["settings"]
    assert s["checkpoint_weights_sha256"] == moved != untrained
    assert s["agent_weights_sha256"] == s["untrained_weights_sha256"] == untrained
    for name in ("checkpoint", "untrained"):
        d = result["designers"][name]
        assert d["summary"]["proposals"] == len(d["proposals"]) >= QUICK.heldout
        assert {p["parent"] for p in d["proposals"]} <= set(result["parents"])
    c = result["comparison"]["checkpoint_minus_untrained"]
    assert c["n_a"] == len(result["designers"]["checkpoint"]["proposals"]) and "p_value" in c
    assert (tmp_path / "checkpoint.json").is_file()


def test_bad_settings_are_refused_before_any_model_loads(monkeypatch, tmp_path):
    from spade_envs.selfplay import designer_checkpoint as dc

    def no_model(cfg):
        raise AssertionError("a model was loaded")

    monkeypatch.delenv("SPADE_BENCH_CHECKPOINT", raising=False)
    with pytest.raises(SelfPlayConfigError, match="SPADE_BENCH_CHECKPOINT"):
        dc.run()
    with pytest.raises(SelfPlayConfigError, match="not a saved designer"):
        dc.score_checkpoint(QUICK, str(tmp_path), None, tmp_path, trainer_factory=no_model)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SelfPlayConfigError, match="spade/Env-99999"):
        dc.score_checkpoint(QUICK, str(tmp_path), "spade/Env-00003,spade/Env-99999", tmp_path, trainer_factory=no_model)
