"""Eval outputs: the results JSON (DESIGN.md section 10 shape), a Markdown leaderboard and
an HTML report with plots (matplotlib, embedded as base64 PNGs).

``build_results`` makes ``{"suite", "agent", "summary", "entries", ...}`` plus what makes
a result reproducible: environment versions, the registry revision, package versions
and the options used. ``write_report(results, out_dir)`` writes ``results.json``,
``leaderboard.md`` and ``report.html`` and returns their paths.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from .stats import rate_summary


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def build_results(suite: str, agent: str, rows: Sequence[dict[str, Any]], summary: dict[str, Any],
                  **extra: Any) -> dict[str, Any]:
    """The results object; ``extra`` (options, registry_revision...) is kept at top level."""
    out: dict[str, Any] = {
        "suite": suite, "agent": agent, "summary": summary, "entries": list(rows),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": {"spade-envs": _version("spade-envs"), "bfcl-eval": _version("bfcl-eval")},
    }
    if suite == "registry":
        out["env_versions"] = summary.get("env_versions", [])
        out["registry_revision"] = summary.get("registry_revision")
    out.update(extra)
    return out


def _pct(block: dict[str, Any] | None) -> str:
    if not block:
        return "-"
    lo, hi = block["ci95"]
    return f"{100 * block['rate']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] (n={block['n']})"


def headline(results: dict[str, Any]) -> dict[str, Any]:
    """The main success block of a result (registry: ``success``; BFCL/ACEBench: ``overall``)."""
    s = results["summary"]
    return s.get("success") or s.get("overall") or rate_summary(e.get("passed") for e in results["entries"])


def markdown_table(results_list: Sequence[dict[str, Any]]) -> str:
    """A leaderboard with one row per result, best first."""
    rows = sorted(results_list, key=lambda r: -headline(r)["rate"])
    lines = ["| rank | agent | suite | success % [95% CI] | state % | response % | process |",
             "|---:|---|---|---|---|---|---|"]
    for i, r in enumerate(rows, 1):
        s = r["summary"]
        state = s.get("state_ok", {}).get("rate") if isinstance(s.get("state_ok"), dict) else None
        resp = s.get("response_ok", {}).get("rate") if isinstance(s.get("response_ok"), dict) else None
        proc = s.get("process_acc")
        fmt = lambda v: "-" if v is None else f"{100 * v:.1f}"  # noqa: E731
        lines.append(f"| {i} | {r['agent']} | {r['suite']} | {_pct(headline(r))} | {fmt(state)} | {fmt(resp)} | "
                     f"{'-' if proc is None else f'{proc:.3f}'} |")
    breakdown = _breakdown_lines(results_list[0]) if len(results_list) == 1 else []
    return "\n".join(lines + breakdown) + "\n"


def _groups(results: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    s = results["summary"]
    out = {}
    if "per_skill" in s:
        out["skill"] = {k: v["success"] for k, v in s["per_skill"].items()}
    if "per_generation" in s:
        out["generation"] = {k: v["success"] for k, v in s["per_generation"].items()}
    if "per_category" in s:
        out["category"] = dict(s["per_category"])
    return out


def _breakdown_lines(results: dict[str, Any]) -> list[str]:
    lines = []
    for name, group in _groups(results).items():
        lines += ["", f"| {name} | success % [95% CI] |", "|---|---|"]
        lines += [f"| {k} | {_pct(v)} |" for k, v in group.items()]
    return lines


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _bar_plot(title: str, group: dict[str, dict[str, Any]]) -> str:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    names = list(group)
    rates = [group[k]["rate"] for k in names]
    lo = [max(0.0, r - group[k]["ci95"][0]) for r, k in zip(rates, names)]
    hi = [max(0.0, group[k]["ci95"][1] - r) for r, k in zip(rates, names)]
    fig, ax = plt.subplots(figsize=(max(4, 0.8 * len(names) + 2), 3.2))
    ax.bar(range(len(names)), rates, yerr=[lo, hi], capsize=4, color="#4c72b0")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (95% CI)")
    ax.set_title(title)
    try:
        return _png(fig)
    finally:
        plt.close(fig)


def _regret_plot(entries: Sequence[dict[str, Any]]) -> str:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    per_env: dict[str, list[Any]] = {}
    for e in entries:
        per_env.setdefault(e["id"], [e.get("regret"), []])[1].append(bool(e["passed"]))
    points = [(reg, sum(w) / len(w)) for reg, w in per_env.values() if isinstance(reg, (int, float))]
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    if points:
        ax.scatter([p[0] for p in points], [p[1] for p in points], color="#dd8452")
    else:
        ax.text(0.5, 0.5, "no regret recorded for these environments", ha="center", va="center",
                transform=ax.transAxes, fontsize=9)
    ax.set_xlabel("designer regret")
    ax.set_ylabel("agent success rate")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("success vs regret (per environment)")
    try:
        return _png(fig)
    finally:
        plt.close(fig)


def plots(results: dict[str, Any]) -> dict[str, str]:
    """``{title: base64 PNG}`` for every breakdown of the result, plus success vs regret
    for registry suites."""
    out = {f"success per {name}": _bar_plot(f"success per {name}", group)
           for name, group in _groups(results).items() if group}
    if results["suite"] == "registry":
        out["success vs regret"] = _regret_plot(results["entries"])
    return out


def html_report(results: dict[str, Any]) -> str:
    """A self-contained HTML page: headline, leaderboard, plots, failing entries."""
    esc = html.escape
    imgs = "\n".join(f'<figure><img alt="{esc(t)}" src="data:image/png;base64,{b}"/><figcaption>{esc(t)}</figcaption></figure>'
                     for t, b in plots(results).items())
    failing = [e for e in results["entries"] if not e.get("passed")][:200]
    fail_rows = "\n".join(f"<tr><td>{esc(str(e['id']))}</td><td>{esc(str(e.get('error_type') or e.get('error') or ''))[:200]}</td></tr>"
                          for e in failing)
    meta = {k: results.get(k) for k in ("created", "versions", "registry_revision", "options") if results.get(k) is not None}
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>spade eval: {esc(results['suite'])} / {esc(results['agent'])}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px}}figure{{display:inline-block;margin:8px}}pre{{background:#f6f6f6;padding:8px}}</style>
</head><body>
<h1>{esc(results['suite'])} &middot; {esc(results['agent'])}</h1>
<p>success: <b>{esc(_pct(headline(results)))}</b></p>
<h2>Plots</h2>
{imgs}
<h2>Summary</h2><pre>{esc(json.dumps({k: v for k, v in results['summary'].items() if k != 'env_versions'}, indent=1)[:20000])}</pre>
<h2>Failing entries ({len(failing)} shown)</h2><table><tr><th>id</th><th>why</th></tr>{fail_rows}</table>
<h2>Reproducibility</h2><pre>{esc(json.dumps(meta, indent=1))}</pre>
</body></html>
"""


def write_report(results: dict[str, Any], out_dir: str | Path) -> dict[str, str]:
    """Write ``results.json``, ``leaderboard.md`` and ``report.html`` under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "markdown": out / "leaderboard.md", "html": out / "report.html"}
    paths["json"].write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    paths["markdown"].write_text(markdown_table([results]), encoding="utf-8")
    paths["html"].write_text(html_report(results), encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}
