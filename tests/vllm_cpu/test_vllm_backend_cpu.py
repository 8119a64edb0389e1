"""vLLM on CPU (vllm-cpu 0.32, ``make test-vllm``: its own environment ``.venv-vllm`` from
``requirements/vllm-cpu.txt``; skipped in the main one, which has no vLLM). One engine
over the tiny random Llama of ``conftest.model_dir`` (head_dim 64, fp32, ``enforce_eager=True``,
``VLLM_CPU_KVCACHE_SPACE=2``):

- :class:`VLLMBackend` seeds each request (``request_seeds``): rows of one call differ,
  the same call repeats exactly;
- its sampling logprobs (processed, temperature 1) agree with the transformers forward on
  the same weights within ``LOGPROB_TOL`` nats per token;
- params-mode proposals decoded under a JSON schema (vLLM structured outputs) parse and
  validate; the random model's unconstrained output does not.
"""

from __future__ import annotations

import os

import pytest

from json_check import matches

pytest.importorskip("vllm")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")

LOGPROB_TOL = 2e-3  # nats per token, fp32 both sides (vLLM's CPU kernels vs transformers' eager)
SCHEMA = {"type": "object", "properties": {"level": {"enum": [0, 1, 2]}, "name": {"enum": ["maze", "grid"]}},
          "required": ["level", "name"], "additionalProperties": False}


@pytest.fixture(scope="module")
def backend(model_dir):
    from spade_envs.agents.backend_vllm import VLLMBackend

    b = VLLMBackend(str(model_dir), dtype="float32", enforce_eager=True, max_model_len=512, batch_size=8)
    yield b
    b.close()


PROMPT = [1, 450, 3681, 310, 278, 3186, 338]


def test_per_request_seeds(backend):
    a = backend.generate([PROMPT] * 4, max_new_tokens=12, temperature=1.0, seed=11)
    b = backend.generate([PROMPT] * 4, max_new_tokens=12, temperature=1.0, seed=11)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]  # reproducible
    assert len({tuple(g.token_ids) for g in a}) > 1  # one seed per request: the rows differ


def test_logprobs_agree_with_transformers(backend, model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    gens = backend.generate([PROMPT, PROMPT[:4]], max_new_tokens=16, temperature=1.0, seed=3)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    worst = 0.0
    for g in gens:
        assert len(g.logprobs) == len(g.token_ids) > 0
        ids = torch.tensor([g.prompt_token_ids + g.token_ids])
        with torch.no_grad():
            logits = model(ids).logits[0, len(g.prompt_token_ids) - 1:-1].float()
        ref = torch.log_softmax(logits, -1).gather(1, torch.tensor(g.token_ids).unsqueeze(1)).squeeze(1)
        worst = max(worst, float((ref - torch.tensor(g.logprobs)).abs().max()))
    assert worst < LOGPROB_TOL, worst


def test_guided_json_proposals(backend):
    free = backend.generate([PROMPT] * 4, max_new_tokens=24, temperature=1.0, seed=5)
    guided = backend.generate([PROMPT] * 4, max_new_tokens=24, temperature=1.0, seed=5, json_schema=SCHEMA)

    def valid(text: str) -> bool:
        return matches(text, SCHEMA)

    assert all(valid(g.text) for g in guided), [g.text for g in guided]
    assert not any(valid(g.text) for g in free)
