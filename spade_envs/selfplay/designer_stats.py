"""Statistics and pictures of ``spade bench designer``.

- :func:`compare`: the difference of two samples' means with a percentile bootstrap 95 %
  interval (each sample resampled on its own) and a two-sided permutation-test p-value
  (labels shuffled over the pooled sample); the unit is one proposal (an invalid one
  counts as regret 0), so proposals of one group are treated as independent;
- :func:`knob_distributions`: for each knob, the count of every chosen value among the
  valid proposals of a set of steps (a value is its JSON text; ``difficulty`` is then a
  histogram over its levels), plus the share of proposals per parent;
- :func:`plot` writes ``designer.png`` (mean regret and frontier share per step, one line
  per arm, with a 95 % interval band over the step's proposals);
- :func:`tensorboard` writes every numeric step figure as ``designer/<arm>/<name>``.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path
from statistics import fmean
from typing import Any, Sequence

N_RESAMPLES = 2000


def compare(a: Sequence[float], b: Sequence[float], *, seed: int = 0, n: int = N_RESAMPLES) -> dict[str, Any]:
    """``mean(a) - mean(b)`` with its bootstrap 95 % interval and permutation p-value."""
    a, b = [float(x) for x in a], [float(x) for x in b]
    if not a or not b:
        return {"diff": None, "ci95": [None, None], "p_value": None, "n_a": len(a), "n_b": len(b)}
    rng = random.Random(seed)
    diff = fmean(a) - fmean(b)
    boots = sorted(fmean(rng.choices(a, k=len(a))) - fmean(rng.choices(b, k=len(b))) for _ in range(n))
    low, high = boots[int(0.025 * n)], boots[min(n - 1, int(0.975 * n))]
    pooled, k = a + b, 0
    for _ in range(n):
        rng.shuffle(pooled)
        if abs(fmean(pooled[:len(a)]) - fmean(pooled[len(a):])) >= abs(diff) - 1e-12:
            k += 1
    return {"diff": round(diff, 4), "ci95": [round(low, 4), round(high, 4)], "p_value": round((k + 1) / (n + 1), 4),
            "n_a": len(a), "n_b": len(b), "mean_a": round(fmean(a), 4), "mean_b": round(fmean(b), 4)}


def quarters(n_steps: int) -> tuple[range, range]:
    """The first and the last quarter of ``n_steps`` steps (at least one step each)."""
    q = max(1, n_steps // 4)
    return range(0, q), range(max(0, n_steps - q), n_steps)


def proposal_regrets(records: Sequence[Any], steps: range) -> list[float]:
    """Per-proposal regret of the steps in ``steps`` (invalid or unscored: 0)."""
    return [float(p["regret"] or 0.0) for r in records if r.step in steps for p in r.proposals]


def knob_distributions(proposals: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """See the module docstring."""
    valid = [p for p in proposals if p.get("valid") and p.get("point") is not None]
    knobs: dict[str, Counter] = {}
    for p in valid:
        for k, v in p["point"].items():
            knobs.setdefault(k, Counter())[json.dumps(v)] += 1
    parents = Counter(p.get("parent") or "none" for p in valid)

    def order(c: Counter) -> dict[str, int]:
        def key(item: tuple[str, int]) -> tuple[int, float, str]:
            try:
                return (0, float(json.loads(item[0])), "")
            except (TypeError, ValueError):
                return (1, 0.0, item[0])
        return dict(sorted(c.items(), key=key))

    return {"proposals": len(proposals), "valid": len(valid), "parents": dict(parents.most_common()),
            "knobs": {k: order(c) for k, c in sorted(knobs.items())}}


def _band(values: Sequence[float]) -> tuple[float, float, float]:
    m = fmean(values) if values else 0.0
    if len(values) < 2:
        return m, m, m
    sd = math.sqrt(sum((x - m) ** 2 for x in values) / (len(values) - 1))
    half = 1.96 * sd / math.sqrt(len(values))
    return m, m - half, m + half


def plot(arms: dict[str, Sequence[Any]], path: str | Path) -> Path | None:
    """``designer.png``; None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, records in arms.items():
        if not records:
            continue
        xs = [r.step for r in records]
        for ax, figure in zip(axes, ("regret", "frontier")):
            vals = [[float(p["regret"] or 0.0) if figure == "regret" else
                     float(p["win_rate_plain"] is not None and p["regret"] is not None
                           and 0 < p["win_rate_plain"] < 1 and p["regret"] > 0)
                     for p in r.proposals] for r in records]
            bands = [_band(v) for v in vals]
            line, = ax.plot(xs, [b[0] for b in bands], marker="o", ms=3, label=name)
            ax.fill_between(xs, [b[1] for b in bands], [b[2] for b in bands], alpha=0.2, color=line.get_color())
    axes[0].set_title("mean proposal regret per step (95 % band)")
    axes[1].set_title("frontier share per step (95 % band)")
    for ax in axes:
        ax.set_xlabel("designer step")
        ax.legend()
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def tensorboard(arms: dict[str, Sequence[Any]], log_dir: str | Path) -> str:
    """Scalars of every arm's steps; returns the folder, or why none was written."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return "tensorboard is not installed"
    writer = SummaryWriter(str(log_dir))
    try:
        for name, records in arms.items():
            for r in records:
                for k, v in r.metrics.items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step":
                        writer.add_scalar(f"designer/{name}/{k}", float(v), r.step)
    finally:
        writer.close()
    return str(log_dir)
