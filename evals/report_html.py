"""The HTML pages of an eval run, built with escaping by default (DESIGN.md section 10).

Every value a page shows (run and agent names, entry ids, reasons, transcripts, the
figures of a results file someone else wrote) is data, and a page is rendered by a
Jinja2 template with ``autoescape=True``: every value is escaped, none is marked safe
(the page's own plots go into a ``src`` attribute as ``data:image/png;base64,`` and
characters of the base64 alphabet, checked), and every text value loses its terminal
sequences and controls first (:func:`~spade_envs.textsafe.safe_text`, the template's
``finalize``). No HTML is built by string concatenation:

- :func:`render_report`: the report of one run (``report.html``) from the figures
  :func:`.report.html_report` gathers;
- :func:`render_leaderboard`: several runs' leaderboards (``spade leaderboard``).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

_B64 = re.compile(r"[A-Za-z0-9+/=]*")


_MACROS = """{% macro table(header, rows) -%}
<table><tr>{% for h in header %}<th>{{ h }}</th>{% endfor %}</tr>
{%- for row in rows %}<tr>{% for c in row %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
{%- endmacro %}
{% macro boards(groups) -%}
{% for g in groups %}<h3>{{ g.suite }}: {{ g.label }}</h3>
{{ table(g.header, g.rows) }}
{% endfor %}
{%- endmacro %}"""

_REPORT = _MACROS + """<!doctype html>
<html><head><meta charset="utf-8"><title>spade eval: {{ suite }} / {{ agent }}</title>
<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;margin:6px 0}
td,th{border:1px solid #ccc;padding:3px 8px;vertical-align:top}figure{display:inline-block;margin:8px}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;margin:2px 0}.msg{margin:4px 0}</style>
</head><body>
<h1>{{ suite }} &middot; {{ agent }} &middot; run {{ run }}</h1>
<p>{{ h.label }}: <b>{{ pct }}</b> &middot; {{ failing }} failing of {{ h.n }} {{ h.unit }}
{%- for k, v in h.set_apart.items() %} &middot; {{ v }} {{ k }} reported apart{% endfor %}
&middot; full data: results.json, transcripts.jsonl</p>
<h2>Leaderboard</h2>
{{ boards(board) }}
<h2>Summary</h2>
{{ table(["figure", "value"], scalars) }}
{% for name, rows in breakdowns %}<h3>per {{ name }}</h3>
{{ table([name, "success % [95% CI]"], rows) }}
{% endfor %}
{%- if agreement %}<h3>agreement with the benchmark's own evaluator</h3>
{{ table(["figure", "value"], agreement) }}
{% endif %}
<h2>Plots</h2>
{% for title, src in images %}<figure><img alt="{{ title }}" src="{{ src }}"/>
<figcaption>{{ title }}</figcaption></figure>
{% endfor %}
<h2>Failing {{ h.unit }} ({{ shown|length }} of {{ failing }} shown)</h2>
<table><tr><th>id</th><th>why (click for the transcript)</th></tr>
{% for e in shown %}<tr><td>{{ e.id }}{{ e.seed }}</td><td>{{ e.why }}
{%- if e.transcript %}<details><summary>transcript ({{ e.transcript.messages|length }} messages)</summary>
{%- for m in e.transcript.messages %}
<div class='msg {{ m.role }}'><b>{{ m.role }}</b>: <pre>{{ m.content }}</pre></div>
{%- endfor %}
{%- if e.transcript.tail %}<p>rewards per step: {{ e.transcript.rewards }};
terminated={{ e.transcript.terminated }}, truncated={{ e.transcript.truncated }}</p>{% endif %}
</details>{% endif %}</td></tr>
{% endfor %}</table>
<h2>Reproducibility</h2><pre>{{ meta }}</pre>
</body></html>
"""

_LEADERBOARD = _MACROS + """<!doctype html><html><head><meta charset='utf-8'><title>spade leaderboard</title><style>
body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:3px 8px}
</style></head><body><h1>Leaderboard</h1>
{{ boards(board) }}
</body></html>
"""


@functools.cache
def _templates() -> Any:
    import jinja2
    import markupsafe

    from spade_envs.textsafe import safe_text

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             finalize=lambda v: v if isinstance(v, markupsafe.Markup) or not isinstance(v, str)
                             else safe_text(v))
    return env.from_string(_REPORT), env.from_string(_LEADERBOARD)


def _transcript(entry: dict[str, Any]) -> dict[str, Any] | None:
    t = entry.get("transcript")
    if isinstance(t, dict):
        messages, tail = t.get("messages") or [], True
    elif isinstance(t, list):
        messages, tail, t = t, False, {}
    else:
        return None
    shown = [{"role": str(m.get("role", "")), "content": str(m.get("content", ""))[:4000]}
             for m in (messages if isinstance(messages, list) else []) if isinstance(m, dict)]
    return {"messages": shown, "tail": tail, "rewards": str(t.get("rewards") or [])[:2000],
            "terminated": str(t.get("terminated"))[:40], "truncated": str(t.get("truncated"))[:40]}


def _image_src(b64: str) -> str:
    if not isinstance(b64, str) or not _B64.fullmatch(b64):
        raise ValueError("a plot is not base64 text")
    return "data:image/png;base64," + b64


def render_report(*, results: dict[str, Any], h: dict[str, Any], pct: str, failing: int,
                  board: list[dict[str, Any]], scalars: list[tuple[str, str]],
                  breakdowns: list[tuple[str, list[tuple[str, str]]]], agreement: list[tuple[str, str]],
                  plots: dict[str, str], shown: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The report page of one run from its figures (:func:`.report.html_report` gathers
    them): every value escaped by the template."""
    return _templates()[0].render(
        suite=str(results["suite"]), agent=str(results["agent"]), run=str(results.get("run") or ""), h=h, pct=pct,
        failing=failing, board=board, scalars=scalars, breakdowns=breakdowns, agreement=agreement,
        images=[(t, _image_src(b)) for t, b in plots.items()],
        shown=[{**e, "transcript": _transcript(e["entry"])} for e in shown],
        meta=json.dumps(meta, indent=1, default=str)).lstrip()


def render_leaderboard(board: list[dict[str, Any]]) -> str:
    """The leaderboard page (``spade leaderboard``) of boards ``{suite, label, header, rows}``."""
    return _templates()[1].render(board=board).lstrip()
