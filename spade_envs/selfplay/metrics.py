"""Per-round metrics: ``metrics.jsonl`` (always), TensorBoard (when installed), ``metrics.png``.

Every logged row gets its designer shares (:func:`shares`: accepted and frontier share of
the round's proposals); the plot draws lines over rounds for designer acceptance, frontier
share, regret, agent reward and win rates, and both roles' GRPO losses.

TensorBoard (``tensorboard``, a pinned dependency) gets every numeric field of a row
as ``selfplay/<key>`` at step = round, plus per-list means (advantages) as
``selfplay/<key>_mean`` and ``_abs_mean``; ``tensorboard --logdir OUT/tensorboard``.
Without the package only JSONL and the plot are written and
:attr:`MetricsLogger.tensorboard_note` says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: the panels of the plot: (title, [(key, label), ...]); each key is one line over rounds
PLOTTED = (
    ("designer acceptance", [("accepted_share", "accepted / proposed")]),
    ("designer learning signal", [("frontier_share", "in the frontier band / proposed")]),
    ("regret of the plays", [("mean_regret", "mean regret (all plays)"),
                             ("designer_trained_regret", "designer's proposals (mean regret)")]),
    ("agent reward", [("agent_reward", "mean reward"), ("win_rate_plain", "win rate (no hint)"),
                      ("win_rate_hint", "win rate (hint)")]),
    ("GRPO loss", [("agent_loss", "agent"), ("designer_loss", "designer")]),
    ("novelty of proposals", [("novelty", "novelty")]),
)


def shares(row: dict[str, Any]) -> dict[str, float | None]:
    """``accepted_share`` (valid / proposed) and ``frontier_share`` (proposals played in the
    frontier band, 0 < plain win rate < 1 and regret > 0, / proposed) of a round; None in a
    round without proposals."""
    proposed = row.get("proposed") or 0
    if not proposed:
        return {"accepted_share": None, "frontier_share": None}
    return {"accepted_share": round((row.get("valid") or 0) / proposed, 4),
            "frontier_share": round((row.get("frontier") or 0) / proposed, 4)}


class MetricsLogger:
    """Appends one JSON object per round; mirrors scalars to TensorBoard when possible."""

    def __init__(self, out_dir: str | Path, *, tensorboard: bool = True, write: bool = True) -> None:
        self.write = write  # False on non-main ranks: nothing is written
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.out_dir / "metrics.jsonl"
        self.writer = None
        self.tensorboard_note = "disabled"
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(str(self.out_dir / "tensorboard"))
                self.tensorboard_note = str(self.out_dir / "tensorboard")
            except ImportError:
                self.tensorboard_note = "tensorboard is not installed: JSONL and plot only (pip install tensorboard)"

    def truncate(self, last_round: int) -> None:
        """Keep only rounds <= ``last_round`` (on resume from a checkpoint)."""
        if not self.write:
            return
        rows = [r for r in self.read() if r.get("round", -1) <= last_round]
        self.path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def log(self, row: dict[str, Any]) -> None:
        """Append ``row`` after adding its :func:`shares` to it (in place)."""
        row.update(shares(row))
        if not self.write:
            return
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
        if self.writer is not None:
            for key, value in row.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
                    self.writer.add_scalar(f"selfplay/{key}", value, row["round"])
                elif isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
                    self.writer.add_scalar(f"selfplay/{key}_mean", sum(value) / len(value), row["round"])
                    self.writer.add_scalar(f"selfplay/{key}_abs_mean", sum(abs(v) for v in value) / len(value),
                                           row["round"])
            self.writer.flush()

    def plot(self) -> Path | None:
        """``metrics.png``: one panel per entry of :data:`PLOTTED`, a line (with markers) per
        key over rounds (None without data)."""
        rows = self.read()
        if not rows:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator

        fig, axes = plt.subplots(2, 3, figsize=(13, 6.5))
        for ax, (title, curves) in zip(axes.flat, PLOTTED):
            for key, label in curves:
                pts = [(r["round"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
            if not ax.lines:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            elif len(curves) > 1:
                ax.legend(fontsize=7)
            else:
                ax.set_ylabel(curves[0][1], fontsize=8)
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("round")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds are whole numbers
        fig.tight_layout()
        path = self.out_dir / "metrics.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        return path

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
