// Charts of health series, drawn by the vendored uPlot (vendor/README.md):
// a canvas, sized through the CSSOM, so the strict CSP holds.

import uPlot from "../vendor/uplot/uPlot.esm.js";

const HEIGHT = 180;
const DAY = 86400;

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/**
 * lineChart draws points ({time, value}, oldest first) into el, labelled
 * with unit, and follows el's width. It returns a function that removes it.
 */
export function lineChart(el, { label, unit, points }) {
  const xs = points.map((p) => Date.parse(p.time) / 1000);
  const ys = points.map((p) => p.value);
  const ink = cssVar("--muted", "#66706b");
  const grid = cssVar("--line", "#dfe3df");
  const accent = cssVar("--accent", "#2f6f5e");
  const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  const width = () => Math.max(240, el.clientWidth);
  const plot = new uPlot({
    width: width(),
    height: HEIGHT,
    legend: { show: true },
    cursor: { drag: { x: false, y: false } },
    // uPlot widens a lone point's range by 86400/ms seconds (1000 days for
    // second timestamps): give one measurement a day either side instead.
    scales: { x: { time: true, range: (u, lo, hi) => (xs.length === 1 ? [xs[0] - DAY, xs[0] + DAY] : [lo, hi]) } },
    axes: [axis, { ...axis, label: unit || "", size: 56 }],
    series: [
      {},
      { label: unit ? `${label} (${unit})` : label, stroke: accent, width: 2, points: { show: points.length < 60, size: 6, fill: accent }, value: (u, v) => (v == null ? "—" : `${v} ${unit}`.trim()) },
    ],
  }, [xs, ys], el);
  const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: HEIGHT }));
  resize.observe(el);
  return () => {
    resize.disconnect();
    plot.destroy();
  };
}
