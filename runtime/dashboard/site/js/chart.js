// Two small SVG charts, no library: a line of points (reward over time) and grouped bars (mean
// reward per resources version and mode). Values are rewards: the y axis is fitted to them.

const NS = "http://www.w3.org/2000/svg";
const [W, H, PAD_L, PAD_B, PAD_T, PAD_R] = [720, 250, 44, 34, 26, 12];

function el(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The y range: [0, 1] unless the values leave it. */
function yRange(values) {
  const finite = values.filter(Number.isFinite);
  return [Math.min(0, ...finite), Math.max(1, ...finite)];
}

function frame(svg, [lo, hi], label) {
  const y = (v) => PAD_T + (H - PAD_T - PAD_B) * (1 - (v - lo) / (hi - lo || 1));
  for (let k = 0; k <= 4; k++) {
    const v = lo + ((hi - lo) * k) / 4;
    svg.append(el("line", { class: "grid", x1: PAD_L, x2: W - PAD_R, y1: y(v), y2: y(v) }));
    svg.append(el("text", { x: PAD_L - 6, y: y(v) + 4, "text-anchor": "end" }, v.toFixed(2)));
  }
  svg.append(el("line", { class: "axis", x1: PAD_L, x2: PAD_L, y1: PAD_T, y2: H - PAD_B }));
  svg.append(el("text", { x: W - PAD_R, y: H - 6, "text-anchor": "end" }, label));
  return y;
}

/**
 * `points`: `[{x, y, title}]` (x: e.g. seconds since start), drawn as dots; `line`: `[{x, y}]`
 * (e.g. a moving mean), drawn through them and named `lineLabel` in a legend.
 */
export function lineChart(points, line, xLabel, lineLabel) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "data-chart": "line" });
  const y = frame(svg, yRange(points.map((p) => p.y)), xLabel);
  const xs = points.map((p) => p.x);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const x = (v) => PAD_L + (W - PAD_L - PAD_R) * (x1 > x0 ? (v - x0) / (x1 - x0) : 0.5);
  for (const p of points) {
    const dot = el("circle", { class: "point", cx: x(p.x), cy: y(p.y), r: 2.5 });
    dot.append(el("title", {}, p.title));
    svg.append(dot);
  }
  if (line.length > 1) {
    svg.append(el("polyline", { class: "series", points: line.map((p) => `${x(p.x)},${y(p.y)}`).join(" ") }));
    legend(svg, [["series-key", lineLabel]]);
  }
  return svg;
}

/** A legend in the top margin, left to right: `[[class, label]]`. */
function legend(svg, entries) {
  entries.forEach(([cls, label], i) => {
    const left = PAD_L + i * 140;
    svg.append(el("rect", { class: cls, x: left, y: 6, width: 10, height: 10 }));
    svg.append(el("text", { x: left + 16, y: 15 }, label));
  });
}

/**
 * `groups`: `[{label, bars: [{series, value, title}]}]`: one cluster per group, a bar per series
 * (coloured by its class `bar-<series>`), the group's label under it.
 */
export function barChart(groups) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "data-chart": "bars" });
  const values = groups.flatMap((g) => g.bars.map((b) => b.value));
  const [lo, hi] = yRange(values);
  const y = frame(svg, [lo, hi], "");
  const slot = (W - PAD_L - PAD_R) / Math.max(groups.length, 1);
  groups.forEach((group, gi) => {
    const width = (slot * 0.7) / Math.max(group.bars.length, 1);
    group.bars.forEach((bar, bi) => {
      const left = PAD_L + gi * slot + slot * 0.15 + bi * width;
      const rect = el("rect", {
        class: `bar-${bar.series}`, x: left, width: Math.max(width - 2, 1),
        y: Math.min(y(bar.value), y(0)), height: Math.abs(y(0) - y(bar.value)),
      });
      rect.append(el("title", {}, bar.title));
      svg.append(rect);
    });
    svg.append(el("text", { x: PAD_L + gi * slot + slot / 2, y: H - PAD_B + 16, "text-anchor": "middle" }, group.label));
  });
  const series = [...new Set(groups.flatMap((g) => g.bars.map((b) => b.series)))];
  legend(svg, series.map((s) => [`bar-${s}`, s]));
  return svg;
}
