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


def md_cell(value: Any) -> str:
    """``value`` as the text of one Markdown table cell: terminal sequences and controls
    removed (:func:`~spade_envs.textsafe.safe_text`), HTML escaped (Markdown renders raw
    HTML), ``|``, ``[``, ``]`` and backquotes escaped, lines joined."""
    import html

    from spade_envs.textsafe import safe_text

    text = " ".join(safe_text(value).split())
    text = html.escape(text, quote=False).replace("\\", "\\\\")
    for mark in "|[]`":  # a cell, a link or code span never starts inside a name
        text = text.replace(mark, "\\" + mark)
    return text


def markdown_table(results_list: Sequence[dict[str, Any]]) -> str:
    """The leaderboard: one table per suite, one row per run (best first), each run named
    (its name and creation time keep two runs of one agent apart)."""
    lines: list[str] = []
    for suite, group in by_suite(results_list).items():
        label, unit = HEADLINES.get(suite, ("success", "entries"))
        if lines:
            lines.append("")
        lines += [f"## {md_cell(suite)}", "",
                  f"| rank | run | agent | {label} % [95% CI] | {unit} | state % | response % | process | created |",
                  "|---:|---|---|---|---:|---|---|---|---|"]
        for i, r in enumerate(_ranked(group), 1):
            s = r["summary"]
            state = s.get("state_ok", {}).get("rate") if isinstance(s.get("state_ok"), dict) else None
            resp = s.get("response_ok", {}).get("rate") if isinstance(s.get("response_ok"), dict) else None
            proc = s.get("process_acc")
            fmt = lambda v: "-" if v is None else f"{100 * v:.1f}"  # noqa: E731
            h = headline(r)
            lines.append(f"| {i} | {md_cell(run_name(r))} | {md_cell(r['agent'])} | {_pct(h)} | {h['n']} | "
                         f"{fmt(state)} | {fmt(resp)} | {'-' if proc is None else f'{proc:.3f}'} | "
                         f"{md_cell(r.get('created', ''))} |")
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
        lines += ["", f"| {md_cell(name)} | success % [95% CI] |", "|---|---|"]
        lines += [f"| {md_cell(k)} | {_pct(v)} |" for k, v in group.items()]
    return lines


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _as_text(plot: Any) -> Any:
    """Run a plot with every label rendered as plain text: names come from programs and
    rows (a skill named ``$\\foo$``), and matplotlib would parse them as mathtext."""
    import functools

    @functools.wraps(plot)
    def plain(*args: Any, **kwargs: Any) -> Any:
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
            return plot(*args, **kwargs)

    return plain


@_as_text
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


@_as_text
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


def _fmt_rate(v: Any) -> str:
    if isinstance(v, dict) and "rate" in v:
        return _pct(v)
    if isinstance(v, float):
        return f"{v:.3f}"
    return "n/a" if v is None else str(v)


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


def _boards(results_list: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"suite": suite, "label": HEADLINES.get(suite, ("success", ""))[0], "header": LEADERBOARD_HEADER,
             "rows": leaderboard_rows(group)} for suite, group in by_suite(results_list).items()]


def html_report(results: dict[str, Any], others: Sequence[dict[str, Any]] = ()) -> str:
    """A self-contained HTML page: headline, leaderboard (this run plus ``others``),
    summary tables, plots, and every failing entry with why it failed and its transcript
    (rendered by :mod:`.report_html`: a template with autoescape, never concatenation)."""
    from .report_html import render_report

    failing = [e for e in counted_entries(results) if not e.get("passed")]
    s = results["summary"]
    scalars = [(k, _fmt_rate(v)) for k, v in s.items()
               if k not in ("env_versions", "per_skill", "per_generation", "per_category", "agreement")
               and (v is None or isinstance(v, (int, float, str)) or (isinstance(v, dict) and "rate" in v))]
    agreement = [(k, json.dumps(v, default=str)[:300]) for k, v in s["agreement"].items() if k != "disagreements"] \
        if isinstance(s.get("agreement"), dict) else []
    shown = [{"id": str(e.get("id")), "seed": f" seed {e['seed']}" if "seed" in e else "", "why": _why(e)[:400],
              "entry": e} for e in failing[:300]]
    meta = {k: results.get(k) for k in ("run", "created", "versions", "registry_revision", "options")
            if results.get(k) is not None}
    h = headline(results)
    return render_report(
        results={**results, "run": run_name(results)}, h=h, pct=_pct(h), failing=len(failing),
        board=_boards([results, *others]), scalars=scalars, agreement=agreement, plots=plots(results),
        breakdowns=[(name, [(k, _pct(v)) for k, v in group.items()]) for name, group in _groups(results).items()],
        shown=shown, meta=meta)


def leaderboard_page(results_list: Sequence[dict[str, Any]]) -> str:
    """One HTML leaderboard over several runs (``spade leaderboard``; :mod:`.report_html`)."""
    from .report_html import render_leaderboard

    return render_leaderboard(_boards(results_list))


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
