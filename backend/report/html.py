"""One self-contained HTML file from the report's data: opens offline in a browser, prints section by section.

* Plotly's JavaScript (``plotly.offline.get_plotlyjs()``, 4.8 MB) is inlined once, gzipped and
  base64-encoded (about 1.9 MB), and unpacked in the browser with the standard
  ``DecompressionStream``; the figures are JSON data blocks drawn by one small script. Every table
  is plain HTML, so the numbers stay readable (and print) where scripts do not run.
* A Content-Security-Policy admits no network request of any kind (``default-src 'none'``), images
  only from ``data:`` URIs and only the one script whose SHA-256 it names, so even a tag that got
  past the escaping could neither run nor phone home.
* Every interpolation of text goes through ``html.escape``; JSON inside ``<script>`` blocks has its
  ``<``, ``>`` and ``&`` written as ``\\u003c`` escapes so no string can close the block.
* System fonts only; ``@media print`` keeps colours, puts each section on a new page and keeps a
  gallery item on one page.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Mapping
from functools import lru_cache
from html import escape
from typing import Any

import plotly.io as pio
from plotly.offline import get_plotlyjs

from backend.present.text import count, interval, pp
from backend.report import tables
from backend.report.figures import FONT_FAMILY, figures
from backend.report.palette import CORRECT, INK, NEUTRAL, WRONG
from backend.scope.binary import describe

PLOT_CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["sendDataToCloud"]}

CSS = f"""
:root {{ --ink: {INK}; --correct: {CORRECT}; --wrong: {WRONG}; --neutral: {NEUTRAL}; }}
* {{ box-sizing: border-box; }}
body {{ font-family: {FONT_FAMILY}; color: var(--ink); margin: 0; background: #fff; font-size: 14px; line-height: 1.45;
       -webkit-print-color-adjust: exact; print-color-adjust: exact; }}
main {{ max-width: 780px; margin: 0 auto; padding: 24px 16px 64px; }}
h1 {{ font-size: 24px; margin: 0 0 4px; }} h2 {{ font-size: 19px; margin: 32px 0 8px; border-bottom: 1px solid #ddd; }}
h3 {{ font-size: 15px; margin: 0 0 4px; }}
.muted, caption, .note {{ color: #5f6368; font-size: 12px; }}
table {{ border-collapse: collapse; margin: 8px 0 16px; font-size: 12px; font-variant-numeric: tabular-nums; }}
caption {{ caption-side: top; text-align: left; padding-bottom: 4px; }}
th, td {{ padding: 3px 6px; border-bottom: 1px solid #e3e3e3; text-align: right; vertical-align: top; }}
th:first-child, td:first-child, table.kv th, table.kv td {{ text-align: left; }}
tbody th {{ min-width: 10em; overflow-wrap: anywhere; }}
thead th {{ border-bottom: 1.5px solid var(--ink); }}
td .ci {{ display: block; color: #5f6368; font-size: 11px; white-space: nowrap; }}
code, .cmd {{ font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12px; }}
.cmd {{ display: block; background: #f5f5f5; padding: 6px 8px; white-space: pre-wrap; word-break: break-all; }}
.fig {{ width: 100%; max-width: 748px; margin: 8px 0; }}
.chip {{ display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: baseline; }}
.item {{ border: 1px solid #ddd; border-radius: 6px; padding: 10px 12px; margin: 12px 0; }}
.item ul.options {{ list-style: none; margin: 2px 0 6px 8px; padding: 0; }} .item .q {{ margin: 4px 0; }}
table.traj td {{ text-align: center; min-width: 34px; color: #fff; font-weight: 600; border: 1px solid #fff; }}
table.traj td.ok {{ background: var(--correct); }} table.traj td.bad {{ background: var(--wrong); }}
table.traj td.model {{ color: var(--ink); background: none; text-align: left; font-weight: 400; }}
table.traj td small {{ display: block; font-weight: 400; font-size: 10px; }}
.strip {{ display: flex; align-items: center; gap: 2px; margin: 2px 0; flex-wrap: wrap; }}
.strip .label {{ width: 150px; font-size: 11px; color: #5f6368; }}
.strip img {{ height: 40px; border-radius: 2px; }}
#js-status {{ color: var(--wrong); }}
@page {{ size: A4; margin: 12mm; }}
@media print {{
  main {{ max-width: none; padding: 0; }}
  section {{ break-before: page; }} section:first-of-type {{ break-before: auto; }}
  .item, table, .fig {{ break-inside: avoid; }} h2, h3 {{ break-after: avoid; }}
  .modebar-container {{ display: none !important; }}
  .item {{ margin: 6px 0; padding: 6px 10px; }} .item ul.options {{ columns: 2; column-gap: 16px; }}
  .strip img {{ height: 30px; }} .strip {{ margin: 1px 0; }} table.traj {{ margin: 4px 0; }}  /* two gallery items a page */
}}
"""

BOOT = """(async () => {
  const status = document.getElementById("js-status");
  try {
    const packed = document.getElementById("plotly-gz").textContent.trim();
    const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    // plotly.js runs as a script of its own, from a blob: URL this page made, so the policy needs no 'unsafe-eval'
    const url = URL.createObjectURL(new Blob([await new Response(stream).text()], { type: "text/javascript" }));
    await new Promise((resolve, reject) => {
      const script = Object.assign(document.createElement("script"), { src: url, onload: resolve, onerror: reject });
      document.head.appendChild(script);
    });
    const figs = JSON.parse(document.getElementById("report-figures").textContent);
    const config = JSON.parse(document.getElementById("plot-config").textContent);
    for (const [id, fig] of Object.entries(figs)) {
      await Plotly.newPlot(id, fig.data, fig.layout, config);
    }
    document.body.dataset.charts = "drawn";
  } catch (err) {
    document.body.dataset.charts = "failed";
    status.textContent = "The charts could not be drawn in this browser (" + err + "). Every number is in the tables.";
  }
})();"""


@lru_cache(maxsize=1)
def plotly_packed() -> str:
    """plotly.js from the installed plotly package, gzipped (no timestamp, so the bytes never change) and base64."""
    return base64.b64encode(gzip.compress(get_plotlyjs().encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


def script_json(obj) -> str:
    """JSON safe inside a ``<script>`` data block: no ``<``, ``>`` or ``&`` can end it or start a tag."""
    text = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(BOOT.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}' blob:; style-src 'unsafe-inline'; "
        "img-src data:; font-src 'none'; connect-src 'none'; form-action 'none'; base-uri 'none'"
    )


def e(value) -> str:
    """Escaped text of any value (``n/a`` for None)."""
    return escape("n/a" if value is None else str(value), quote=True)


def chip(colour: str, text: str) -> str:
    return f'<span class="chip" style="background:{e(colour)}"></span>{e(text)}'


def table_html(t: tables.Table, first_col: dict[str, str] | None = None) -> str:
    """A ``tables.Table``; interval cells split value / interval over two lines; cells carry their number as ``data-value``."""
    head = "".join(f"<th>{e(c)}</th>" for c in t.columns)
    body = []
    for row, values in zip(t.rows, t.values, strict=True):
        cells = []
        for k, (text, value) in enumerate(zip(row, values, strict=True)):
            attrs = "" if value is None else f' data-key="{e(t.keys[k])}" data-value="{e(repr(float(value)))}"'
            main, _, ci = text.partition(" [")
            inner = e(main) + (f'<span class="ci">[{e(ci)}</span>' if ci else "")
            if k == 0 and first_col and text in first_col:
                inner = chip(first_col[text], text)
            tag = "th" if k == 0 else "td"
            cells.append(f'<{tag} scope="row"{attrs}>{inner}</{tag}>' if k == 0 else f"<{tag}{attrs}>{inner}</{tag}>")
        body.append(f'<tr data-row="{e(row[0])}">' + "".join(cells) + "</tr>")
    return (
        f'<table id="table-{e(t.name)}"><caption>{e(t.caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def kv_table(rows: list[tuple[str, str]]) -> str:
    """A two-column key/value table of already escaped HTML values."""
    return '<table class="kv">' + "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def scope_section(data: Mapping[str, Any]) -> str:
    meta, scope = data["meta"], data["scope"]
    flt = {k: v for k, v in scope["item_filter"].items() if v}
    excluded = "".join(
        f"<li><code>{e(label)}</code>: {count(scope['grid_excluded'][label], 'item')}, {e(why)}</li>"
        for label, why in scope["grid_excluded_why"].items()
    )
    rows = [
        ("Store", f"<code>{e(meta['store'])}</code> (version {e(meta['store_version'])})"),
        ("Benchmark", e(scope["benchmark"] or "all benchmarks")),
        ("Models", ", ".join(chip(data["colours"][m], m) for m in scope["models"])),
        (
            "Grid",
            f"{e(' → '.join(scope['grid']))} ({'default grid' if scope['grid_source'] == 'default' else 'given'})",
        ),
        ("Items", f"{scope['n_items']:,} matched, {scope['n_excluded']:,} excluded (a model lacks a configuration)"),
        (
            "Filters",
            e("; ".join(f"{k}: {v if isinstance(v, str) else ', '.join(v)}" for k, v in flt.items()) or "none"),
        ),
        ("Trajectory tag", e(f"{scope['tag']} (of {scope['tag_model']})" if scope["tag"] else "none")),
        ("Flips within noise", "hidden from the transition counts" if scope["beyond_noise"] else "counted"),
        ("Re-runs", "included" if scope["include_reruns"] else "not counted (overlay only)"),
        ("Runs", e(_runs_text(scope))),
        ("Left out of the grid", f"<ul>{excluded}</ul>" if excluded else "nothing"),
        ("Versions", e(", ".join(f"{k} {v}" for k, v in meta["versions"].items()))),
        ("Generated", f'<time id="generated">{e(meta["generated_at"])}</time>'),
    ]
    return (
        f'<section id="scope"><h2>Scope</h2>{kv_table(rows)}'
        f'<p class="muted">Every number in this report, reproduced:</p><code class="cmd">{e(meta["metrics_command"])}</code>'
        f'<p class="muted">This file:</p><code class="cmd">{e(meta["command"])}</code></section>'
    )


def _runs_text(scope: Mapping[str, Any]) -> str:
    """Which run a cell holding several shows (``backend.scope.runs``), as the pages' scope line says it."""
    held = scope.get("runs") or []
    if scope.get("run"):
        chosen = f"run {scope['run']} in every cell (--run)"
    elif held:
        chosen = "the main run, else the first ingested, in each cell"
    else:
        return "one run per cell"
    return chosen + "".join(f"; {r['model']} {r['config']}: {', '.join(r['runs'])}, showing {r['shown']}" for r in held)


def headline_section(data: Mapping[str, Any]) -> str:
    ov = data["overview"]
    note = (
        ""
        if "text" in ov["grid"]
        else '<p class="note">Text overwrite is n/a: the grid has no text-only configuration.</p>'
    )
    return (
        f'<section id="headlines"><h2>Headline numbers</h2>{table_html(tables.headline_table(data), data["colours"])}{note}'
        f'<div class="fig" id="fig-curve"></div>{table_html(tables.transitions_table(data), data["colours"])}</section>'
    )


def score_section(data: Mapping[str, Any]) -> str:
    """The scored (open-ended) items' numbers, apart from accuracy: mean scores, oracle gap, score transitions."""
    if not tables.scored_models(data):
        return ""
    binary = data["overview"].get("binary")
    how = f'<p class="note">{e(describe(binary))}</p>' if binary else ""
    return (
        f'<section id="scores"><h2>Scores: open-ended items</h2>{how}{table_html(tables.score_table(data), data["colours"])}'
        f"{table_html(tables.score_transitions_table(data), data['colours'])}</section>"
    )


def flows_section(data: Mapping[str, Any]) -> str:
    if data["flows"] is None:
        grid = ", ".join(data["scope"]["grid"])
        return (
            '<section id="flows"><h2>Flows</h2><p class="note">Flows need two configurations: this scope has '
            f"only {e(grid)}, so there is no flow between configurations to draw.</p></section>"
        )
    noise = ""
    if data["scope"]["beyond_noise"]:
        noise = f'<p class="note">Within-noise flips hidden: {data["flows"].get("n_hidden", 0):,}.</p>'
    return (
        f'<section id="flows"><h2>Flows of {e(data["flows"]["model"])}</h2><div class="fig" id="fig-sankey"></div>'
        '<p class="note">Green: correct, red: wrong; dark links changed state (rescued / harmed), light links kept it.</p>'
        f"{noise}</section>"
    )


def explain_section(data: Mapping[str, Any]) -> str:
    report = data.get("explain")
    if report is None:
        return '<section id="explain"><h2>Why these items?</h2><p class="note">No flow between consecutive configurations harms an item.</p></section>'
    return (
        f'<section id="explain"><h2>Why these items? {e(report["target"]["describe"])}</h2><div class="fig" id="fig-explain"></div>'
        f"{table_html(tables.explain_table(report))}"
        + "".join(f'<p class="note">Not tested: {e(note)}.</p>' for note in report["untested"])
        + "</section>"
    )


def task_section(data: Mapping[str, Any]) -> str:
    return f'<section id="task-types"><h2>By task type</h2>{table_html(tables.task_table(data))}</section>'


def overlap_section(data: Mapping[str, Any]) -> str:
    ov = data["overlap"]
    if ov is None:
        return '<section id="overlap"><h2>Confused-item overlap</h2><p class="note">Needs two or more models.</p></section>'
    share = "n/a" if ov["shared_share"] is None else f"{100 * ov['shared_share']:.1f}%"
    counts = kv_table(
        [
            ("Confused by every model", f"{ov['confused_by_all']:,}"),
            ("Confused by any model", f"{ov['confused_by_any']:,}"),
            ("Shared share", share),
        ]
        + [(f"Confused, {m}", f"{n:,}") for m, n in ov["confused"].items()]
    )
    return (
        f'<section id="overlap"><h2>Are the confused items the same items?</h2>{counts}'
        '<div class="fig" id="fig-jaccard"></div><div class="fig" id="fig-intersections"></div></section>'
    )


def policy_section(data: Mapping[str, Any]) -> str:
    pol = data["policy"]
    if not pol["available"]:
        return f'<section id="frontier"><h2>Adaptive budgets</h2><p class="note">Not available: {e(pol["why"])}</p></section>'
    sweep, match = pol["sweep"], pol["sweep"]["matching"]
    text = "No threshold reaches the top budget's accuracy on these items."
    if match is not None:
        text = (
            f"Cheapest threshold matching fixed {e(sweep['ladder'][-1])} ({pp(sweep['top_accuracy'])}%): "
            f"t = {match['threshold']:.3g}, accuracy {e(interval(match['accuracy'], match.get('accuracy_ci')))}%, "
            f"frame saving {e(interval(match['saving'], match.get('saving_ci')))}%."
        )
    return (
        f'<section id="frontier"><h2>Adaptive budgets: {e(pol["model"])}</h2><div class="fig" id="fig-frontier"></div>'
        f'<p>{text}</p><p class="note">{count(sweep["n_items"], "item")} with a confidence at every budget of '
        f"{e(', '.join(sweep['ladder']))}; {sweep['n_without_confidence']:,} without.</p></section>"
    )


def trajectory_table(item: dict, grid: list[str], colours: dict[str, str]) -> str:
    head = "<th>model</th>" + "".join(f"<th>{e(c)}</th>" for c in grid)
    rows = []
    for model, t in item["trajectories"].items():
        cells = "".join(
            f'<td class="{"ok" if ok else "bad"}" title="{e(c)}">{"✓" if ok else "✗"} {e(a or "–")}<small>{"" if p is None else f"{p:.2f}"}</small></td>'
            for c, ok, a, p in zip(grid, t["correct"], t["answer"], t["confidence"], strict=True)
        )
        rows.append(f'<tr><td class="model">{chip(colours[model], model)}</td>{cells}</tr>')
    return f'<table class="traj"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def strips_html(item: dict) -> str:
    if item["video_problem"]:
        note = f'<p class="note">Frames not shown: {e(item["video_problem"])}.</p>'
    else:
        note = ""
    out = []
    for s in item["frames"]:
        if not s["shown"] and not s["jpeg_base64"] and item["video_problem"]:
            continue  # neither indices nor frames: the note above says why
        label = f"{e(s['config'])} · " + (
            f"{len(s['shown'])} of {s['n_frames']} frames" if s["n_frames"] is not None else "frames unknown"
        )
        imgs = "".join(
            f'<img alt="frame {i}" title="frame {i}" src="data:image/jpeg;base64,{b}">'
            for i, b in zip(s["shown"], s["jpeg_base64"], strict=False)
        )
        if not imgs:
            imgs = f'<span class="note">{e(" ".join(str(i) for i in s["shown"]) or s["note"])}</span>'
        out.append(f'<div class="strip"><span class="label">{label}</span>{imgs}</div>')
    return note + "".join(out)


def gallery_section(data: Mapping[str, Any]) -> str:
    items = data["gallery"]
    grid = data["overview"]["grid"]
    if not items:
        return '<section id="gallery"><h2>Gallery</h2><p class="note">No item asked for (or none is informative).</p></section>'
    arts = []
    for item in items:
        options = "".join(f"<li>{e(o)}</li>" for o in item["options"])
        notes = "".join(
            f"<li><b>{e(a['tag'])}</b>{'' if not a['model'] else ' (' + e(a['model']) + ')'}: {e(a['note'] or '')} "
            f'<span class="muted">{e(a["author"])}</span></li>'
            for a in item["annotations"]
        )
        arts.append(
            f'<article class="item" id="item-{e(item["benchmark"])}-{e(item["item_id"])}">'
            f"<h3>{e(item['benchmark'])} / {e(item['item_id'])}</h3>"
            f'<p class="muted">{e(item["task_type"] or "no task type")} · {e(item["duration"] or "no duration")} · {e("; ".join(item["reasons"]))}</p>'
            f'<p class="q">{e(item["question"] or "(no question text in the store)")}</p><ul class="options">{options}</ul><p class="muted">answer: {e(item["target"])}</p>'
            f"{trajectory_table(item, grid, data['colours'])}{strips_html(item)}"
            + (f"<ul>{notes}</ul>" if notes else "")
            + "</article>"
        )
    intro = (
        '<p class="note">The most informative items: terminal regressions, visually confused items and the largest '
        "disagreement between models, taken in turn. Cells: ✓ correct / ✗ wrong, the answer given and its confidence; "
        "strips: frames each budget fed the model (at most 8 shown, evenly spread).</p>"
    )
    return f'<section id="gallery"><h2>Gallery: {count(len(items), "item")}</h2>{intro}{"".join(arts)}</section>'


def render(data: Mapping[str, Any]) -> str:
    """The report as one HTML document (a pure function of ``data``)."""
    scope = data["scope"]
    title = f"trajaudit report: {', '.join(scope['models'])} on {scope['benchmark'] or 'all benchmarks'}"
    figs = {name: json.loads(pio.to_json(fig, validate=False)) for name, fig in figures(data).items()}
    body = "".join(
        [
            scope_section(data),
            headline_section(data),
            score_section(data),
            flows_section(data),
            explain_section(data),
            task_section(data),
            overlap_section(data),
            policy_section(data),
            gallery_section(data),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(_csp())}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body><main>"
        f'<h1>{e(title)}</h1><p class="muted">A static audit report from trajaudit: every chart draws offline; every number is '
        f'in a table. <span id="js-status"></span></p>{body}</main>\n'
        f'<script type="application/json" id="plot-config">{script_json(PLOT_CONFIG)}</script>\n'
        f'<script type="application/json" id="report-figures">{script_json(figs)}</script>\n'
        f'<script type="application/gzip+base64" id="plotly-gz">{plotly_packed()}</script>\n'
        f"<script>{BOOT}</script>\n</body></html>\n"
    )
