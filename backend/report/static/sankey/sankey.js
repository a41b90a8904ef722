// The Flows page's Sankey (pages/common/sankey.py): an st.components.v2 module that draws a Plotly Sankey trace
// (arrangement "fixed": node x and y given) from the figure's JSON as SVG, in the page itself (no iframe: a frame
// to load was half of each switch to the page; no chart library, nothing fetched). Each run calls the default
// export with data = {figure, height, selected}; a click sets the trigger value "click" = {what: "link"|"node",
// index}. The page passes the opened link or node back as `selected`: drawn outlined, the rest faded, and named
// in the chart's data-selected ("link:3", "node:5"; "" for none) for tests.
const NS = "http://www.w3.org/2000/svg";
function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}
function decode(s) {  // the entities Plotly's text dialect decodes (data text is escaped for it)
  return String(s).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&");
}
function fmt(v, spec) {  // the d3-format specs the figures use: d, .1f, +.1f, .3g, .1%
  if (v === null || v === undefined || (typeof v === "number" && isNaN(v))) return "n/a";
  if (typeof v !== "number") return decode(v);
  const m = /^(\+)?(,)?(?:\.(\d+))?([dfg%e])?$/.exec(spec || "");
  if (!m) return String(v);
  const p = m[3] === undefined ? 6 : +m[3];
  let s;
  switch (m[4]) {
    case "d": s = String(Math.round(v)); break;
    case "f": s = v.toFixed(p); break;
    case "e": s = v.toExponential(p); break;
    case "%": s = (100 * v).toFixed(p) + "%"; break;
    case "g": s = v.toPrecision(Math.max(p, 1)); break;
    default: s = String(v);
  }
  if (m[2]) s = s.replace(/^(-?\d+)/, (d) => d.replace(/\B(?=(\d{3})+(?!\d))/g, ","));
  return (m[1] && v >= 0 ? "+" : "") + s;
}
// A hovertemplate as lines of [text, bold] runs: markup (<br>, <b>) only from the template, values as text.
function template(tpl, point, valueformat) {
  const lines = [[]];
  let bold = false;
  const body = String(tpl || "").replace(/<extra>.*?<\/extra>/g, "");
  for (const part of body.split(/(<br\s*\/?>|<\/?b>|%\{[^}]*\})/i)) {
    if (!part) continue;
    if (/^<br/i.test(part)) lines.push([]);
    else if (/^<b>$/i.test(part)) bold = true;
    else if (/^<\/b>$/i.test(part)) bold = false;
    else if (part.startsWith("%{")) {
      const [path, spec] = part.slice(2, -1).split(":");
      const m = /^customdata(?:\[(\d+)\])?$/.exec(path);
      const v = m ? (m[1] === undefined ? point.customdata : (point.customdata || [])[+m[1]]) : point[path];
      lines[lines.length - 1].push([fmt(v, spec || (path === "value" ? valueformat : "")), bold]);
    } else lines[lines.length - 1].push([decode(part), bold]);
  }
  return lines;
}
// Layout text (a title) as lines of [text, bold] runs: <b> and <br> as Plotly draws them, the rest as text,
// wrapped at spaces to fit `room` px (the chart beside the item list is narrower than its title).
function textLines(text, font, room) {
  const measure = document.createElement("canvas").getContext("2d");
  const lines = [[]];
  let bold = false, used = 0;
  for (const part of String(text || "").split(/(<br\s*\/?>|<\/?b>)/i)) {
    if (/^<br/i.test(part)) { lines.push([]); used = 0; continue; }
    if (/^<b>$/i.test(part)) { bold = true; continue; }
    if (/^<\/b>$/i.test(part)) { bold = false; continue; }
    for (const word of decode(part).split(/(?<= )/)) {  // each word keeps its trailing space
      if (!word) continue;
      measure.font = (bold ? "bold " : "") + font;
      const w = measure.measureText(word).width;
      if (used > 0 && used + w > room) { lines.push([]); used = 0; }
      lines[lines.length - 1].push([word, bold]);
      used += w;
    }
  }
  return lines;
}
// Each chart's state: {chart, tip, shapes, last, setTriggerValue} (a page may hold several, each in its shadow root).
function showTip(ctx, event, lines, colour) {
  const tip = ctx.tip;
  tip.replaceChildren();
  lines.forEach((runs, k) => {
    if (k) tip.appendChild(document.createElement("br"));
    for (const [text, bold] of runs) {
      const node = bold ? document.createElement("b") : document.createElement("span");
      node.textContent = text;
      tip.appendChild(node);
    }
  });
  tip.style.borderColor = colour;
  tip.style.display = "block";
  const box = ctx.chart.getBoundingClientRect(), cx = event.clientX - box.left, cy = event.clientY - box.top;
  const x = Math.min(cx + 12, box.width - tip.offsetWidth - 4);
  const y = cy + 14 + tip.offsetHeight > box.height ? cy - tip.offsetHeight - 8 : cy + 14;
  tip.style.left = Math.max(x, 0) + "px";
  tip.style.top = Math.max(y, 0) + "px";
}
function hideTip(ctx) { ctx.tip.style.display = "none"; }
// Outline the selected link or node, fade the others (a node keeps the links that touch it).
function mark(ctx, sel) {
  const shapes = ctx.shapes, chart = ctx.chart;
  const link = sel && sel.what === "link" ? sel.index : -1, node = sel && sel.what === "node" ? sel.index : -1;
  shapes.links.forEach((p, k) => {
    p.classList.toggle("selected", k === link);
    p.classList.toggle("touches", shapes.source[k] === node || shapes.target[k] === node);
  });
  shapes.nodes.forEach((r, k) => r.classList.toggle("selected", k === node));
  const shown = link >= 0 && link < shapes.links.length || node >= 0 && node < shapes.nodes.length;
  chart.classList.toggle("has-selection", shown);
  chart.dataset.selected = shown ? `${sel.what}:${sel.index}` : "";
}
function clicked(ctx, what, index) {
  mark(ctx, { what: what, index: index });  // at once, before the page's run answers with the same selection
  ctx.setTriggerValue("click", { what: what, index: index });
}

function draw(ctx, fig, height) {
  const chart = ctx.chart;
  const trace = fig.data[0], layout = fig.layout || {};
  const font = layout.font || {};
  const width = Math.max(chart.clientWidth, 300);
  const margin = Object.assign({ l: 60, r: 30, t: 90, b: 50 }, layout.margin || {});
  const node = trace.node, link = trace.link;
  const n = node.label.length, thick = node.thickness || 18, pad = node.pad || 18;
  // Every label sits right of its node: the last column's need room inside the chart.
  const measure = document.createElement("canvas").getContext("2d");
  measure.font = `${font.size || 12}px ${font.family || "sans-serif"}`;
  const lastX = Math.max(...node.x);
  const room = Math.max(0, ...node.label.map((t, k) => node.x[k] === lastX ? measure.measureText(decode(t)).width + 10 : 0));
  const titleSize = (layout.title && layout.title.font && layout.title.font.size) || 15;
  const titleLines = textLines(layout.title && layout.title.text, `${titleSize}px ${font.family || "sans-serif"}`, width - 90);
  const lineHeight = Math.round(titleSize * 1.3), extra = (titleLines.length - 1) * lineHeight;  // the title's added lines
  const W = width - margin.l - Math.max(margin.r, room), H = height - margin.t - extra - margin.b;
  // Node values: the larger of what flows in and out (d3-sankey's rule).
  const vin = new Array(n).fill(0), vout = new Array(n).fill(0);
  link.source.forEach((s, k) => { vout[s] += link.value[k]; vin[link.target[k]] += link.value[k]; });
  const value = vin.map((v, k) => Math.max(v, vout[k]));
  // One scale for every column, so that the fullest column fits with its padding.
  const columns = {};
  node.x.forEach((x, k) => { (columns[x] = columns[x] || []).push(k); });
  const ky = Math.min(...Object.values(columns).map((ks) =>
    (H - (ks.length - 1) * pad) / Math.max(ks.reduce((a, k) => a + value[k], 0), 1)));
  const boxes = node.x.map((x, k) => {
    const h = Math.max(value[k] * ky, 1);
    const y0 = Math.min(Math.max(node.y[k] * H - h / 2, 0), H - h);  // node y is its centre, kept inside
    const x0 = x * (W - thick);
    return { x0: x0, x1: x0 + thick, y0: y0, y1: y0 + h };
  });
  // Links leave a node ordered by their target's height and arrive ordered by their source's.
  const order = (ks, other) => ks.sort((a, b) => boxes[other[a]].y0 - boxes[other[b]].y0 || a - b);
  const outs = boxes.map(() => []), ins = boxes.map(() => []);
  link.source.forEach((s, k) => { outs[s].push(k); ins[link.target[k]].push(k); });
  const y0 = [], y1 = [];
  outs.forEach((ks, s) => { let y = boxes[s].y0; for (const k of order(ks, link.target)) { y0[k] = y; y += link.value[k] * ky; } });
  ins.forEach((ks, t) => { let y = boxes[t].y0; for (const k of order(ks, link.source)) { y1[k] = y; y += link.value[k] * ky; } });

  const svg = el("svg", { xmlns: NS, width: width, height: height, class: "sankey",
                          "font-family": font.family || "sans-serif", "font-size": font.size || 12, fill: font.color || "#222" });
  el("rect", { width: width, height: height, fill: layout.paper_bgcolor || "#fff" }, svg);
  titleLines.forEach((runs, k) => {
    const t = el("text", { x: 8, y: 24 + k * lineHeight, "font-size": titleSize }, svg);
    for (const [text, bold] of runs) el("tspan", bold ? { "font-weight": "bold" } : {}, t).textContent = text;
  });
  const area = el("g", { transform: `translate(${margin.l},${margin.t + extra})` }, svg);
  const linkLayer = el("g", {}, area), nodeLayer = el("g", {}, area);
  const shapes = ctx.shapes = { links: [], nodes: [], source: link.source, target: link.target };
  link.source.forEach((s, k) => {
    const t = link.target[k], w = link.value[k] * ky;
    const xa = boxes[s].x1, xb = boxes[t].x0, xm = (xa + xb) / 2;
    const a = y0[k], b = y1[k];
    const d = `M${xa},${a}C${xm},${a} ${xm},${b} ${xb},${b}L${xb},${b + w}C${xm},${b + w} ${xm},${a + w} ${xa},${a + w}Z`;
    const path = el("path", { d: d, class: "sankey-link", fill: link.color[k] }, linkLayer);
    shapes.links.push(path);
    const point = { customdata: (link.customdata || [])[k], value: link.value[k] };
    path.addEventListener("mousemove", (e) => showTip(ctx, e, template(link.hovertemplate, point, trace.valueformat), link.color[k]));
    path.addEventListener("mouseleave", () => hideTip(ctx));
    path.addEventListener("click", () => clicked(ctx, "link", k));
  });
  boxes.forEach((bx, k) => {
    const g = el("g", { class: "sankey-node" }, nodeLayer);
    const rect = el("rect", { x: bx.x0, y: bx.y0, width: thick, height: bx.y1 - bx.y0, fill: node.color[k] }, g);
    shapes.nodes.push(rect);
    const label = el("text", { x: bx.x1 + 6, y: (bx.y0 + bx.y1) / 2, dy: "0.35em", "pointer-events": "none" }, g);
    label.textContent = decode(node.label[k]);
    const point = { customdata: (node.customdata || [])[k], value: value[k] };
    rect.addEventListener("mousemove", (e) => showTip(ctx, e, template(node.hovertemplate, point, trace.valueformat), node.color[k]));
    rect.addEventListener("mouseleave", () => hideTip(ctx));
    rect.addEventListener("click", () => clicked(ctx, "node", k));
  });
  const save = document.createElement("button");
  save.className = "save"; save.type = "button"; save.textContent = "⤓ SVG"; save.title = "Download the chart as SVG";
  save.addEventListener("click", () => {
    const blob = new Blob([new XMLSerializer().serializeToString(svg)], { type: "image/svg+xml" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob); a.download = "sankey.svg"; a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  });
  const tip = ctx.tip = document.createElement("div");
  tip.className = "tip"; tip.style.fontFamily = font.family || "sans-serif"; tip.style.fontSize = (font.size || 12) + "px";
  chart.replaceChildren(svg, save, tip);
  chart.dataset.ready = "1";
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let chart = parentElement.querySelector(".trajaudit-sankey");
  if (!chart) {  // the first run: the chart's element and state, kept across runs
    chart = document.createElement("div");
    chart.className = "trajaudit-sankey";
    parentElement.appendChild(chart);
    const ctx = { chart: chart, shapes: { links: [], nodes: [], source: [], target: [] }, last: null };
    chart.sankey = ctx;
    new ResizeObserver(() => {  // a narrower column (window, sidebar): drawn again at its width
      if (ctx.last && chart.clientWidth !== ctx.last.width) { draw(ctx, ctx.last.fig, ctx.last.height); ctx.last.width = chart.clientWidth; mark(ctx, ctx.last.selected); }
    }).observe(chart);
  }
  const ctx = chart.sankey;
  ctx.setTriggerValue = setTriggerValue;
  const last = ctx.last;
  if (!last || last.figure !== data.figure || last.height !== data.height) {  // a new selection alone: no redraw
    ctx.last = { figure: data.figure, fig: JSON.parse(data.figure), height: data.height };
    draw(ctx, ctx.last.fig, ctx.last.height);
    ctx.last.width = chart.clientWidth;
  }
  ctx.last.selected = data.selected || null;
  mark(ctx, ctx.last.selected);
}
