"""One self-contained HTML file from the report's data: opens offline in a browser, prints section by section.

* The figures are the pages' Vega-Lite specs (``backend.report.figures``), drawn by Vega, Vega-Lite and
  vega-embed (vendored under ``static/vega``, about 0.85 MB) and, for the Sankey, the Flows page's own script
  (``static/sankey``). The scripts are inlined once, gzipped and base64-encoded (0.39 MB), and unpacked
  in the browser with the standard ``DecompressionStream``; the figures are JSON data blocks drawn by one small
  script. Every table is plain HTML, so the numbers stay readable (and print) where scripts do not run.
* A Content-Security-Policy admits no network request of any kind (``default-src 'none'``), images
  only from ``data:`` URIs and only the one script whose SHA-256 it names, so even a tag that got
  past the escaping could neither run nor phone home. Vega evaluates its expressions with
  vega-interpreter, not ``new Function``, so the policy needs no ``'unsafe-eval'``.
* The markup is Jinja2 templates (``backend/report/templates/``) with autoescape: every value written
  into them is escaped unless it is markup this module made (CSS, the boot script, the JSON blocks);
  JSON inside ``<script>`` blocks has its ``<``, ``>`` and ``&`` written as ``\\u003c`` escapes so no
  string can close the block.
* System fonts only; ``@media print`` keeps colours, puts each section on a new page and keeps a
  gallery item on one page.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from backend.contracts.base import to_json, unset
from backend.contracts.common import ScopeHeader
from backend.contracts.report import ReportData
from backend.present.metrics import COMPARE_METRICS
from backend.present.palette import CORRECT, INK, NEUTRAL, WRONG
from backend.present.text import MISSING, count, interval, pp
from backend.report import tables
from backend.report.figures import FONT_FAMILY, figures
from backend.scope.binary import describe

STATIC = Path(__file__).resolve().parent / "static"
# vega-embed's options: the menu saves SVG or PNG (no source view, no link to the online editor); expressions
# run in the interpreter (the policy forbids 'unsafe-eval').
EMBED_OPTIONS = {"actions": {"export": True, "source": False, "compiled": False, "editor": False}, "renderer": "svg"}

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
.trajaudit-sankey {{ position: relative; }}
{(STATIC / "sankey" / "sankey.css").read_text()}
@page {{ size: A4; margin: 12mm; }}
@media print {{
  main {{ max-width: none; padding: 0; }}
  section {{ break-before: page; }} section:first-of-type {{ break-before: auto; }}
  .item, table, .fig {{ break-inside: avoid; }} h2, h3 {{ break-after: avoid; }}
  .vega-embed details {{ display: none !important; }}
  .item {{ margin: 6px 0; padding: 6px 10px; }} .item ul.options {{ columns: 2; column-gap: 16px; }}
  .strip img {{ height: 30px; }} .strip {{ margin: 1px 0; }} table.traj {{ margin: 4px 0; }}  /* two gallery items a page */
}}
"""

BOOT = """(async () => {
  const status = document.getElementById("js-status");
  try {
    const packed = document.getElementById("charts-gz").textContent.trim();
    const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    // the scripts run as one of their own, from a blob: URL this page made, so the policy needs no 'unsafe-eval'
    const url = URL.createObjectURL(new Blob([await new Response(stream).text()], { type: "text/javascript" }));
    await new Promise((resolve, reject) => {
      const script = Object.assign(document.createElement("script"), { src: url, onload: resolve, onerror: reject });
      document.head.appendChild(script);
    });
    const figs = JSON.parse(document.getElementById("report-figures").textContent);
    const options = JSON.parse(document.getElementById("embed-options").textContent);
    options.ast = true;
    options.expr = vegaInterpreter.expressionInterpreter;
    for (const [id, fig] of Object.entries(figs)) {
      const el = document.getElementById(id);
      if (id === "fig-sankey") {
        trajauditSankey({ data: { figure: JSON.stringify(fig), height: fig.layout.height, selected: null },
                          parentElement: el, setTriggerValue: () => {} });
      } else {
        await vegaEmbed(el, fig, options);
      }
    }
    document.body.dataset.charts = "drawn";
  } catch (err) {
    document.body.dataset.charts = "failed";
    status.textContent = "The charts could not be drawn in this browser (" + err + "). Every number is in the tables.";
  }
})();"""

# The vendored ES modules, made plain scripts: (file, import line -> binding from a global, export line -> global).
_MODULES = (
    (
        STATIC / "vega" / "vega-interpreter.js",
        ("import { ascending, isString, DisallowedObjectProperties } from 'vega-util';",
         "const { ascending, isString, DisallowedObjectProperties } = vega;"),
        ("export { expression as expressionInterpreter };",
         "window.vegaInterpreter = { expressionInterpreter: expression };"),
    ),
    (STATIC / "sankey" / "sankey.js", None, ("export default function (component) {", "window.trajauditSankey = function (component) {")),
)  # fmt: skip


def _plain_script(path: Path, imports: tuple[str, str] | None, export: tuple[str, str]) -> str:
    """An ES module's text as a plain script in its own scope: its one import bound from a global, its export
    assigned to one. Fails loudly if an update changed the lines it rewrites."""
    text = path.read_text(encoding="utf-8")
    for old, new in [p for p in (imports, export) if p is not None]:
        if text.count(old) != 1:
            raise RuntimeError(
                f"{path.name}: expected the line {old!r} once (an updated file? see static/vega/README.md)"
            )
        text = text.replace(old, new)
    return "(() => {\n" + text + "\n})();"


def _without_source_map(text: str) -> str:
    """A build without its ``//# sourceMappingURL`` line (the map is not shipped; nothing may ask for it)."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("//# sourceMappingURL="))


@lru_cache(maxsize=1)
def charts_packed() -> str:
    """Vega, Vega-Lite, vega-embed, vega-interpreter and the Sankey script as one plain script, gzipped (no
    timestamp, so the bytes never change) and base64."""
    vendored = [
        (STATIC / "vega" / name).read_text(encoding="utf-8")
        for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")
    ]
    parts = [*vendored, *(_plain_script(*m) for m in _MODULES)]
    script = ";\n".join(_without_source_map(p) for p in parts)
    return base64.b64encode(gzip.compress(script.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


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


def _text(value: Any) -> Markup:
    """How every ``{{ }}`` of the templates is written: markup (the macros', CSS, the JSON blocks) as it is,
    anything else as text, ``html.escape``\'d (a dash for None). Jinja's autoescape would escape it too;
    this keeps the entities the report has always used (``&quot;``, ``&#x27;``), which its tests read."""
    return value if isinstance(value, Markup) else Markup(escape(MISSING if value is None else str(value), quote=True))


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """The templates under ``backend/report/templates``, escaping every value (autoescape, ``_text``)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("backend.report", "templates"),
        autoescape=True,
        finalize=_text,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals.update(
        tables=tables,
        table_rows=table_rows,
        count=count,
        interval=interval,
        pp=pp,
        describe=describe,
        filters_text=_filters_text,
        runs_text=_runs_text,
        zip=zip,
        unset=unset,
        compare_metrics=COMPARE_METRICS,
    )
    return env


@dataclass(frozen=True)
class Cell:
    """One table cell: its text, the text split at its interval, its number and a chip colour for a first column."""

    text: str
    main: str
    ci: str
    key: str | None
    value: str | None  # repr of the number it shows (the ``data-value`` the tests and scripts read)
    colour: str | None


def table_html(t: tables.Table, first_col: Mapping[str, str] | None = None) -> str:
    """One table as the report writes it (its ``table`` macro: text escaped, each interval under its value, a chip
    of colour before a first-column label in ``first_col``), for a page that shows a short table as plain HTML:
    no table grid for the browser to load and draw (``pages/overview.py``)."""
    return str(_environment().get_template("macros.html.j2").module.table(t, first_col))  # type: ignore[attr-defined]


def table_rows(t: tables.Table, first_col: Mapping[str, str] | None = None) -> list[tuple[str, list[Cell]]]:
    """(row label, cells) of a ``tables.Table``, for the ``table`` macro."""
    rows = []
    for row, values in zip(t.rows, t.values, strict=True):
        cells = []
        for k, (text, value) in enumerate(zip(row, values, strict=True)):
            main, _, ci = text.partition(" [")
            colour = first_col.get(text) if k == 0 and first_col else None
            cells.append(Cell(text, main, ci, t.keys[k], None if value is None else repr(float(value)), colour))
        rows.append((row[0], cells))
    return rows


def _filters_text(scope: ScopeHeader) -> str:
    flt = {k: v for k, v in to_json(scope.item_filter).items() if v}
    return "; ".join(f"{k}: {v if isinstance(v, str) else ', '.join(v)}" for k, v in flt.items()) or "none"


def _runs_text(scope: ScopeHeader) -> str:
    """Which run a cell holding several shows (``backend.scope.runs``), as the pages' scope line says it."""
    held = scope.runs
    if scope.run:
        chosen = f"run {scope.run} in every cell (--run)"
    elif held:
        chosen = "the main run, else the first ingested, in each cell"
    else:
        return "one run per cell"
    return chosen + "".join(f"; {r.model} {r.config}: {', '.join(r.runs)}, showing {r.shown}" for r in held)


def render(data: ReportData) -> str:
    """The report as one HTML document (a pure function of ``data``)."""
    scope = data.scope
    title = f"trajaudit report: {', '.join(scope.models)} on {scope.benchmark or 'all benchmarks'}"
    figs = figures(data)
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            data=data,
            title=title,
            csp=_csp(),
            css=Markup(CSS),
            boot=Markup(BOOT),
            embed_options=Markup(script_json(EMBED_OPTIONS)),
            figures=Markup(script_json(figs)),
            charts=Markup(charts_packed()),
        )
    )
