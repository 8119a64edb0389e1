"""Issue 38's fixes that show without an engine (stand-ins record what reaches vLLM,
DeepSpeed or the server):

- ZeRO-3 without vLLM is refused (config and launch), with one clear error;
- params-mode proposals are JSON-constrained on the vLLM policy backends (colocate:
  ``structured_outputs`` in each request's SamplingParams; server: in the request's
  ``generation_kwargs``, one call per distinct schema) and on ``VLLMBackend``, which also
  seeds each request on its own;
- server-mode weight push in bf16 under bf16 compute (metadata and tensors);
- the DeepSpeed engine's accumulation count follows the step's k;
- DDP does not search for unused parameters.
"""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace

import pytest

from vllm_stubs import StubTokenizer

SCHEMA = {"type": "object", "properties": {"level": {"enum": [0, 1]}}, "required": ["level"]}


@pytest.fixture
def fake_vllm(monkeypatch):
    """A ``vllm`` module whose SamplingParams / StructuredOutputsParams record their keywords."""
    pytest.importorskip("trl")
    import spade_envs.selfplay.trl_bridge  # noqa: F401 (trl probes the real vllm at import: before the stand-in)

    vllm = ModuleType("vllm")
    sp = ModuleType("vllm.sampling_params")
    sp.StructuredOutputsParams = lambda **kw: ("structured", {"json": kw["json"]}) if kw.get(
        "disable_any_whitespace") else ("loose", kw)  # compact JSON: no free whitespace
    vllm.sampling_params = sp
    vllm.SamplingParams = lambda **kw: SimpleNamespace(**kw)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sp)
    return vllm


def _trainer(**vg):
    return SimpleNamespace(processing_class=StubTokenizer(), state=SimpleNamespace(global_step=0), _last_loaded_step=0,
                           accelerator=SimpleNamespace(process_index=0, num_processes=1, is_main_process=True),
                           vllm_generation=SimpleNamespace(sync_weights=lambda: None, **vg))


class _LLM:
    def __init__(self):
        self.params = []

    def generate(self, prompts, params, use_tqdm=False):
        per = params if isinstance(params, list) else [params] * len(prompts)
        self.params.extend(per)
        comp = SimpleNamespace(token_ids=[7, 2], logprobs=[{7: SimpleNamespace(logprob=-0.5)},
                                                            {2: SimpleNamespace(logprob=-0.1)}], finish_reason="stop")
        return [SimpleNamespace(outputs=[comp]) for _ in prompts]


def test_zero3_without_vllm_is_refused(monkeypatch):
    from spade_envs.selfplay import build_config, grpo
    from spade_envs.selfplay.config import SelfPlayConfigError

    with pytest.raises(SelfPlayConfigError, match="zero_stage=3 needs use_vllm"):
        build_config("cpu-tiny", zero_stage=3)
    build_config("cpu-tiny", zero_stage=3, use_vllm=True)  # with vLLM: accepted
    import transformers.integrations as integ

    monkeypatch.setattr(integ, "is_deepspeed_zero3_enabled", lambda: True)  # a zero3.yaml launch
    with pytest.raises(SelfPlayConfigError, match="ZeRO-3 needs use_vllm"):
        grpo.check_zero3_generation(build_config("cpu-tiny"))


def test_colocated_policy_backend_decodes_under_the_schema(fake_vllm):
    from spade_envs.designer.params_mode import supports_json_schema
    from spade_envs.selfplay.policy import TrainerVLLMColocateBackend

    llm = _LLM()
    b = TrainerVLLMColocateBackend(_trainer(), name="m", llm=llm, sampling_params=fake_vllm.SamplingParams)
    assert supports_json_schema(b)
    b.generate([[1, 2], [1, 2]], seed=3, json_schema=[SCHEMA, None])
    assert llm.params[0].structured_outputs == ("structured", {"json": SCHEMA})
    assert not hasattr(llm.params[1], "structured_outputs")
    assert llm.params[0].seed != llm.params[1].seed


def test_server_policy_backend_sends_the_schema(fake_vllm):
    from spade_envs.selfplay.policy import TrainerVLLMServerBackend

    calls = []

    class Client:
        def generate(self, prompts, n=1, generation_kwargs=None, **kw):
            calls.append(dict(generation_kwargs or {}))
            return {"completion_ids": [[7, 2]] * (len(prompts) * n), "logprobs": [[[-0.5], [-0.1]]] * (len(prompts) * n)}

    b = TrainerVLLMServerBackend(_trainer(), name="m", client=Client())
    assert b.supports_json_schema
    gens = b.generate([[1, 2], [3, 4], [5]], seed=1, json_schema=[SCHEMA, SCHEMA, None])
    assert len(gens) == 3 and all(g.token_ids == [7, 2] for g in gens)
    assert sorted(str(c.get("structured_outputs")) for c in calls) == sorted(
        [str({"json": SCHEMA, "disable_any_whitespace": True}), "None"])


def test_vllm_backend_seeds_each_request_and_guides_json(fake_vllm, tmp_path):
    from spade_envs.agents.backend_vllm import VLLMBackend

    llm = _LLM()
    fake_vllm.LLM = lambda **kw: SimpleNamespace(get_tokenizer=StubTokenizer, generate=llm.generate)
    b = VLLMBackend(str(tmp_path))
    b.generate([[1]] * 3, seed=5, json_schema=SCHEMA)
    assert [p.seed for p in llm.params] == [5, 6, 7]  # one seed per request, not one for the batch
    assert all(p.structured_outputs == ("structured", {"json": SCHEMA}) for p in llm.params)


def test_server_push_is_bf16_under_bf16_compute():
    import torch

    from spade_envs.selfplay.trl_bridge import push_weights

    sent = {}

    class Client:
        def update_named_params(self, meta, params):
            sent["meta"] = meta
            sent["dtypes"] = [p.dtype for _, p in params]

        def reset_prefix_cache(self):
            sent["reset"] = True

    weights = [("w", torch.ones(2, 3)), ("b", torch.ones(3))]
    tr = _trainer(mode="server", vllm_client=Client(), _iter_named_params=lambda: iter(weights))
    tr.args = SimpleNamespace(bf16=True)
    push_weights(tr)
    assert [m[1] for m in sent["meta"]] == ["bfloat16", "bfloat16"] and sent["dtypes"] == [torch.bfloat16] * 2
    assert sent["reset"] and [m[2] for m in sent["meta"]] == [[2, 3], [3]]


def test_engine_accumulation_follows_k():
    from spade_envs.selfplay.trl_bridge import set_engine_accumulation

    class Engine:
        gas, set_to = 512, None
        dp_world_size = 2

        def gradient_accumulation_steps(self):
            return self.gas

        def train_micro_batch_size_per_gpu(self):
            return 1

        def set_train_batch_size(self, n):
            self.set_to, self.gas = n, n // 2

    e = Engine()
    set_engine_accumulation(e, 4)
    assert e.set_to == 8 and e.gas == 4


def test_ddp_does_not_search_for_unused_parameters(tmp_path):
    pytest.importorskip("trl")
    from spade_envs.selfplay import build_config, grpo

    assert grpo.grpo_args(build_config("cpu-tiny", out_dir=str(tmp_path))).ddp_find_unused_parameters is False
