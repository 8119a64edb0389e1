"""Eval outputs: the results JSON (DESIGN.md section 10 shape), a Markdown leaderboard and
an HTML report with plots (matplotlib, embedded as base64 PNGs).

``build_results`` makes ``{"suite", "agent", "summary", "entries", ...}`` plus what makes
a result reproducible: environment versions, the registry revision, package versions
and the options used. ``write_report(results, out_dir)`` writes ``results.json``,
``leaderboard.md``, ``report.html`` and ``transcripts.jsonl`` (one line per entry: its
verdict, why it failed, and its transcript) and returns their paths.

Numbers that add up: each suite's headline (:func:`headline`) is a rate over exactly the
entries it counts (:func:`counted_entries`; games: the matches against the fixed
baselines, self-play and game errors reported apart), and the failing entries the page
lists are those entries not passed, so ``k`` + failing = ``n``. Results carry the run's
name (``run``); leaderboards are one table per suite (:func:`by_suite`), never ranking runs
of different suites together, with each run's name and creation time.
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
                  *, run: str | None = None, **extra: Any) -> dict[str, Any]:
    """The results object; ``run`` names the run (default: the agent and the creation
    time); ``extra`` (options, registry_revision...) is kept at top level."""
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    out: dict[str, Any] = {
        "suite": suite, "agent": agent, "run": run or f"{agent} {created}", "summary": summary,
        "entries": list(rows), "created": created,
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


#: What each suite's headline measures: ``(label, unit)``; other suites: success over entries.
HEADLINES = {
    "registry": ("success", "episodes"),
    "games": ("win rate vs the random and scripted baselines", "matches"),
    "bfcl-v4-multi-turn": ("success", "entries"),
    "acebench": ("success", "entries"),
    "acebench-agent": ("success", "entries"),
    "reasoning-gym": ("win rate (score_answer = 1)", "episodes"),
}


def counted_entries(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries the headline rate counts. Every entry, except in the games suite:
    there the headline is the win rate against the fixed baselines, so self-play matches
    and matches that ended in a game error are reported apart (:func:`set_apart`)."""
    entries = list(results["entries"])
    if results["suite"] == "games":
        return [e for e in entries if e.get("opponent") != "self" and e.get("outcome") != "error"]
    return entries


def set_apart(results: dict[str, Any]) -> dict[str, int]:
    """``{reason: count}`` of the entries the headline does not count (games only)."""
    if results["suite"] != "games":
        return {}
    entries = results["entries"]
    out = {"self-play matches": sum(e.get("opponent") == "self" for e in entries),
           "game errors": sum(e.get("opponent") != "self" and e.get("outcome") == "error" for e in entries)}
    return {k: v for k, v in out.items() if v}


def headline(results: dict[str, Any]) -> dict[str, Any]:
    """The headline of a result: ``rate``, ``ci95``, ``n``, ``k`` (a ``rate_summary``
    over :func:`counted_entries`, so ``n - k`` is the number of failing entries listed)
    plus ``label``, ``unit`` and ``set_apart`` (what is not counted, and why)."""
    label, unit = HEADLINES.get(results["suite"], ("success", "entries"))
    block = rate_summary(bool(e.get("passed")) for e in counted_entries(results))
    return {**block, "label": label, "unit": unit, "set_apart": set_apart(results)}


def headline_text(results: dict[str, Any]) -> str:
    """One line: ``<label> 50.0% [31.4, 68.6] over 24 matches (12 self-play matches reported apart)``."""
    h = headline(results)
    lo, hi = h["ci95"]
    apart = ", ".join(f"{v} {k}" for k, v in h["set_apart"].items())
    return (f"{h['label']} {100 * h['rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] over {h['n']} {h['unit']}"
            + (f" ({apart} reported apart)" if apart else ""))


def run_name(results: dict[str, Any]) -> str:
    """The run's name (``spade eval --name``; older results: agent and creation time)."""
    return str(results.get("run") or f"{results['agent']} {results.get('created', '')}".strip())


def by_suite(results_list: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Results grouped by suite (runs of different suites are never ranked together),
    in first-seen suite order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in results_list:
        out.setdefault(str(r["suite"]), []).append(r)
    return out


def _ranked(results_list: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(results_list, key=lambda r: (-headline(r)["rate"], str(r.get("created", "")), run_name(r)))


def markdown_table(results_list: Sequence[dict[str, Any]]) -> str:
    """The leaderboard: one table per suite, one row per run (best first), each run named
    (its name and creation time keep two runs of one agent apart)."""
    lines: list[str] = []
    for suite, group in by_suite(results_list).items():
        label, unit = HEADLINES.get(suite, ("success", "entries"))
        if lines:
            lines.append("")
        lines += [f"## {suite}", "",
                  f"| rank | run | agent | {label} % [95% CI] | {unit} | state % | response % | process | created |",
                  "|---:|---|---|---|---:|---|---|---|---|"]
        for i, r in enumerate(_ranked(group), 1):
            s = r["summary"]
            state = s.get("state_ok", {}).get("rate") if isinstance(s.get("state_ok"), dict) else None
            resp = s.get("response_ok", {}).get("rate") if isinstance(s.get("response_ok"), dict) else None
            proc = s.get("process_acc")
            fmt = lambda v: "-" if v is None else f"{100 * v:.1f}"  # noqa: E731
            h = headline(r)
            lines.append(f"| {i} | {run_name(r)} | {r['agent']} | {_pct(h)} | {h['n']} | {fmt(state)} | {fmt(resp)} | "
                         f"{'-' if proc is None else f'{proc:.3f}'} | {r.get('created', '')} |")
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
    if results["suite"] == "games":  # per game, over the headline's own matches: the n add up
        counted = counted_entries(results)
        games = dict.fromkeys(str(e["id"]) for e in counted)
        out["game"] = {g: rate_summary(bool(e.get("passed")) for e in counted if str(e["id"]) == g) for g in games}
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


def _why(entry: dict[str, Any]) -> str:
    return str(entry.get("why") or entry.get("error_type") or entry.get("error") or "not passed")


def _transcript_html(entry: dict[str, Any]) -> str:
    esc = html.escape
    t = entry.get("transcript")
    if isinstance(t, dict):
        messages = t.get("messages") or []
        rewards = t.get("rewards") or []
        tail = f"<p>rewards per step: {esc(str(rewards))}; terminated={t.get('terminated')}, truncated={t.get('truncated')}</p>"
    elif isinstance(t, list):
        messages, tail = t, ""
    else:
        return ""
    lines = "".join(f"<div class='msg {esc(str(m.get('role', '')))}'><b>{esc(str(m.get('role', '')))}</b>: "
                    f"<pre>{esc(str(m.get('content', ''))[:4000])}</pre></div>" for m in messages if isinstance(m, dict))
    return f"<details><summary>transcript ({len(messages)} messages)</summary>{lines}{tail}</details>"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt_rate(v: Any) -> str:
    if isinstance(v, dict) and "rate" in v:
        return _pct(v)
    if isinstance(v, float):
        return f"{v:.3f}"
    return "n/a" if v is None else str(v)


def summary_html(results: dict[str, Any]) -> str:
    """The summary as tables: headline figures, then one table per breakdown."""
    s = results["summary"]
    scalars = [(k, _fmt_rate(v)) for k, v in s.items()
               if k not in ("env_versions", "per_skill", "per_generation", "per_category", "agreement")
               and (v is None or isinstance(v, (int, float, str)) or (isinstance(v, dict) and "rate" in v))]
    out = [_table(["figure", "value"], scalars)]
    for name, group in _groups(results).items():
        out.append(f"<h3>per {html.escape(name)}</h3>" + _table([name, "success % [95% CI]"],
                                                                 [(k, _pct(v)) for k, v in group.items()]))
    if isinstance(s.get("agreement"), dict):
        flat = [(k, json.dumps(v, default=str)[:300]) for k, v in s["agreement"].items() if k != "disagreements"]
        out.append("<h3>agreement with the benchmark's own evaluator</h3>" + _table(["figure", "value"], flat))
    return "\n".join(out)


def leaderboard_rows(results_list: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Rows of ONE suite's leaderboard (best first); see :data:`LEADERBOARD_HEADER`."""
    out = []
    for i, r in enumerate(_ranked(results_list), 1):
        s = r["summary"]
        pick = lambda k: _fmt_rate(s.get(k)) if isinstance(s.get(k), dict) else "n/a"  # noqa: E731
        proc = s.get("process_acc")
        out.append([str(i), run_name(r), r["agent"], _pct(headline(r)), pick("state_ok"), pick("response_ok"),
                    "n/a" if proc is None else f"{proc:.3f}", str(r.get("created", ""))])
    return out


LEADERBOARD_HEADER = ["rank", "run", "agent", "headline % [95% CI]", "state", "response", "process", "created"]


def _boards_html(results_list: Sequence[dict[str, Any]]) -> str:
    esc = html.escape
    return "\n".join(f"<h3>{esc(suite)}: {esc(HEADLINES.get(suite, ('success', ''))[0])}</h3>"
                     + _table(LEADERBOARD_HEADER, leaderboard_rows(group))
                     for suite, group in by_suite(results_list).items())


def html_report(results: dict[str, Any], others: Sequence[dict[str, Any]] = ()) -> str:
    """A self-contained HTML page: headline, leaderboard (this run plus ``others``),
    summary tables, plots, and every failing entry with why it failed and its transcript."""
    esc = html.escape
    imgs = "\n".join(f'<figure><img alt="{esc(t)}" src="data:image/png;base64,{b}"/><figcaption>{esc(t)}</figcaption></figure>'
                     for t, b in plots(results).items())
    counted = counted_entries(results)
    failing = [e for e in counted if not e.get("passed")]
    shown = failing[:300]
    h = headline(results)
    apart = "".join(f" &middot; {v} {esc(k)} reported apart" for k, v in h["set_apart"].items())
    fail_rows = "\n".join(
        f"<tr><td>{esc(str(e['id']))}{esc(' seed ' + str(e['seed']) if 'seed' in e else '')}</td>"
        f"<td>{esc(_why(e)[:400])}{_transcript_html(e)}</td></tr>" for e in shown)
    meta = {k: results.get(k) for k in ("run", "created", "versions", "registry_revision", "options")
            if results.get(k) is not None}
    board = _boards_html([results, *others])
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>spade eval: {esc(results['suite'])} / {esc(results['agent'])}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}table{{border-collapse:collapse;margin:6px 0}}
td,th{{border:1px solid #ccc;padding:3px 8px;vertical-align:top}}figure{{display:inline-block;margin:8px}}
pre{{background:#f6f6f6;padding:6px;white-space:pre-wrap;margin:2px 0}}.msg{{margin:4px 0}}</style>
</head><body>
<h1>{esc(results['suite'])} &middot; {esc(results['agent'])} &middot; run {esc(run_name(results))}</h1>
<p>{esc(h['label'])}: <b>{esc(_pct(h))}</b> &middot; {len(failing)} failing of {h['n']} {esc(h['unit'])}{apart}
&middot; full data: results.json, transcripts.jsonl</p>
<h2>Leaderboard</h2>
{board}
<h2>Summary</h2>
{summary_html(results)}
<h2>Plots</h2>
{imgs}
<h2>Failing {esc(h['unit'])} ({len(shown)} of {len(failing)} shown)</h2><table><tr><th>id</th><th>why (click for the transcript)</th></tr>{fail_rows}</table>
<h2>Reproducibility</h2><pre>{esc(json.dumps(meta, indent=1))}</pre>
</body></html>
"""


def leaderboard_page(results_list: Sequence[dict[str, Any]]) -> str:
    """One HTML leaderboard over several runs (``spade leaderboard``)."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>spade leaderboard</title><style>"
            "body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 8px}</style></head><body><h1>Leaderboard</h1>"
            f"{_boards_html(results_list)}</body></html>\n")


def write_report(results: dict[str, Any], out_dir: str | Path) -> dict[str, str]:
    """Write ``results.json``, ``leaderboard.md`` and ``report.html`` under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "markdown": out / "leaderboard.md", "html": out / "report.html",
             "transcripts": out / "transcripts.jsonl"}
    paths["json"].write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    with paths["transcripts"].open("w", encoding="utf-8") as f:
        for e in results["entries"]:
            record = {k: e.get(k) for k in ("id", "seed", "category", "passed", "why", "return") if k in e}
            record["transcript"] = e.get("transcript")
            f.write(json.dumps(record, default=str, ensure_ascii=False) + "\n")
    paths["markdown"].write_text(markdown_table([results]), encoding="utf-8")
    paths["html"].write_text(html_report(results), encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}
