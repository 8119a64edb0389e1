r"""spade environments as real reasoning-gym datasets, registered with reasoning-gym's factory.

    import reasoning_gym, spade_envs
    spade_envs.register_reasoning_gym()            # the seed suite's single-answer ids
    ds = reasoning_gym.create_dataset("spade/Env-00002", size=8, seed=1, difficulty=1)
    score = reasoning_gym.get_score_answer_fn("spade/Env-00002")(answer, ds[0])

Contract:

- :func:`register` registers each name (default: the seed suite's environments tagged
  ``single-answer``) with ``reasoning_gym.register_dataset`` under the name given (e.g.
  ``spade/Env-00002``); it is idempotent and returns the names registered. Any
  single-answer environment of the active registry can be named.
- Each name gets a config dataclass of its own: ``seed`` (default ``None``: random),
  ``size`` (default 500) and one field per ``PARAMETERS`` property with its default;
  ``validate()`` checks the values against the program's schema (one clear error).
- The dataset is a ``reasoning_gym.dataset.ProceduralDataset``: entry ``i`` and the
  scoring are :class:`~spade_envs.integrations.answer_datasets.SpadeAnswerDataset`'s
  (the environment judges; ``metadata.source_dataset`` is the registered name, so
  ``CompositeDataset`` routes scores back). The environment opens on first access, so
  ``get_score_answer_fn(name)`` is cheap; parameters left at their defaults are not
  passed to the program (``metadata.env_kwargs`` holds only those set).
- A name whose program declares an integer ``difficulty`` with ``minimum``/``maximum``
  gets a curriculum (``reasoning_gym.factory.create_curriculum(name)``): one scalar attribute
  ``difficulty``, one level per value, starting at the lowest.
- Without reasoning-gym installed, :func:`register` raises
  :class:`~spade_envs.errors.IntegrationError` naming the extra (``spade-envs[evals]``).
"""

from __future__ import annotations

import dataclasses
import keyword
import re
from typing import Any

from ..errors import IntegrationError

RESERVED = ("seed", "size")


def _require():
    try:
        import reasoning_gym.factory as factory
        from reasoning_gym.coaching.attributes import ScalarAttributeDefinition
        from reasoning_gym.coaching.base_curriculum import BaseCurriculum
        from reasoning_gym.dataset import ProceduralDataset
    except ImportError:
        raise IntegrationError("reasoning-gym is not installed: pip install 'spade-envs[evals]'") from None
    return factory, ProceduralDataset, BaseCurriculum, ScalarAttributeDefinition


def default_names() -> list[str]:
    """The seed suite's single-answer environments (tag ``single-answer``)."""
    from ..registry.catalog import seed_records

    return [str(r.env_id.base) for r in seed_records() if "single-answer" in (r.metadata.get("tags") or ())]


def _schema(name: str) -> dict[str, Any]:
    from ..parameters import schema_of
    from ..registry.catalog import resolve

    record = resolve(name)
    return schema_of(record.source, filename=str(record.env_id)) or {"type": "object", "properties": {}}


def _slug(name: str) -> str:
    return re.sub(r"\W+", "_", name).strip("_").title().replace("_", "")


def _config_class(name: str, schema: dict[str, Any]) -> type:
    props = schema.get("properties") or {}
    fields: list[tuple[str, Any, Any]] = [("seed", int | None, None), ("size", int, 500)]
    for key, spec in props.items():
        if key in RESERVED or not key.isidentifier() or keyword.iskeyword(key):
            continue
        fields.append((key, Any, dataclasses.field(default=spec.get("default"))))

    def validate(self) -> None:
        from ..parameters import validate_kwargs

        if not isinstance(self.size, int) or isinstance(self.size, bool) or self.size < 1:
            raise IntegrationError(f"{name}: size must be a positive integer, got {self.size!r}")
        validate_kwargs(schema, self.env_kwargs(), filename=name)

    def env_kwargs(self) -> dict[str, Any]:
        """The parameters set to something other than their default."""
        return {k: getattr(self, k) for k, spec in props.items()
                if hasattr(self, k) and getattr(self, k) != spec.get("default")}

    return dataclasses.make_dataclass(f"{_slug(name)}Config", fields,
                                      namespace={"validate": validate, "env_kwargs": env_kwargs, "name": name})


def _dataset_class(name: str, ProceduralDataset: type) -> type:
    def __init__(self, config: Any) -> None:
        ProceduralDataset.__init__(self, config=config, seed=config.seed, size=config.size)
        self._inner = None

    def inner(self):
        from .answer_datasets import SpadeAnswerDataset

        if self._inner is None:
            self._inner = SpadeAnswerDataset(name, size=self.size, seed=self.seed, **self.config.env_kwargs())
        return self._inner

    def __getitem__(self, idx: int) -> dict[str, Any]:
        return inner(self)[idx]

    def score_answer(self, answer: str | None, entry: dict[str, Any]) -> float:
        from .answer_datasets import score_answer

        return score_answer(answer, entry)

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()
            self._inner = None

    doc = f"reasoning-gym dataset of the spade environment {name} (spade_envs.integrations.rg_datasets)."
    return type(f"{_slug(name)}Dataset", (ProceduralDataset,), {
        "__init__": __init__, "__getitem__": __getitem__, "score_answer": score_answer, "close": close,
        "__doc__": doc, "__module__": __name__, "category": "spade"})


def _curriculum_class(name: str, schema: dict[str, Any], config_cls: type, base: type, attr_cls: type) -> type | None:
    spec = (schema.get("properties") or {}).get("difficulty") or {}
    lo, hi = spec.get("minimum"), spec.get("maximum")
    if spec.get("type") != "integer" or not isinstance(lo, int) or not isinstance(hi, int) or hi < lo:
        return None

    def __init__(self) -> None:
        base.__init__(self, name, config_cls)
        self._define_attributes(attr_cls(name="difficulty", field_name="difficulty", levels=list(range(lo, hi + 1)),
                                         description=str(spec.get("description") or "difficulty")))

    return type(f"{_slug(name)}Curriculum", (base,), {"__init__": __init__, "__module__": __name__})


def register(names: list[str] | None = None) -> list[str]:
    """Register ``names`` (default :func:`default_names`) with reasoning-gym; returns them."""
    factory, ProceduralDataset, BaseCurriculum, Scalar = _require()
    done = []
    for name in default_names() if names is None else [str(n) for n in names]:
        if name not in factory.DATASETS:
            schema = _schema(name)
            config_cls = _config_class(name, schema)
            curriculum = _curriculum_class(name, schema, config_cls, BaseCurriculum, Scalar)
            factory.register_dataset(name, _dataset_class(name, ProceduralDataset), config_cls, curriculum)
        done.append(name)
    return done


register_reasoning_gym = register  # the name ``spade_envs.register_reasoning_gym`` exposes
