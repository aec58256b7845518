// swarm web: the team's cost over time as an inline SVG made node by node (createElementNS;
// no HTML, no library). The series is the state's cost_series: [[ms, cumulative USD], ...].
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const CHART = { width: 600, height: 180, left: 52, right: 10, top: 10, bottom: 24 };

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function renderCost(series, now) {
  document.getElementById("cost-now").textContent =
    now === null || now === undefined ? "(no price known)" : "($" + Number(now).toFixed(2) + " now)";
  const box = document.getElementById("cost");
  const points = series.filter((p) => Array.isArray(p) && isFinite(p[0]) && isFinite(p[1]));
  if (!points.length) {
    box.replaceChildren(el("div", "empty", "no cost sampled yet"));
    return;
  }
  const c = CHART;
  const t0 = points[0][0];
  const t1 = Math.max(points[points.length - 1][0], t0 + 1000);
  const top = Math.max(...points.map((p) => p[1]), 0.01) * 1.1;
  const x = (t) => c.left + ((t - t0) / (t1 - t0)) * (c.width - c.left - c.right);
  const y = (usd) => c.height - c.bottom - (usd / top) * (c.height - c.top - c.bottom);
  const chart = svg("svg", { viewBox: "0 0 " + c.width + " " + c.height, role: "img", class: "cost-chart" });
  chart.append(svg("title", {}, "team cost over time, USD"));
  for (const fraction of [0, 0.5, 1]) {
    const usd = (top / 1.1) * fraction;
    chart.append(svg("line", { x1: c.left, x2: c.width - c.right, y1: y(usd), y2: y(usd), class: "grid" }));
    chart.append(svg("text", { x: c.left - 4, y: y(usd) + 4, "text-anchor": "end" }, "$" + usd.toFixed(2)));
  }
  const when = (ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  chart.append(svg("text", { x: c.left, y: c.height - 6 }, when(t0)));
  chart.append(svg("text", { x: c.width - c.right, y: c.height - 6, "text-anchor": "end" }, when(t1)));
  const line = points.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1));
  if (points.length === 1) line.push(x(t1).toFixed(1) + "," + y(points[0][1]).toFixed(1));
  chart.append(svg("polyline", { points: line.join(" "), class: "cost-line" }));
  const last = points[points.length - 1];
  chart.append(svg("circle", { cx: x(last[0]), cy: y(last[1]), r: 3, class: "cost-dot" }));
  box.replaceChildren(chart);
}
