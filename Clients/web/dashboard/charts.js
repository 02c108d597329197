// Small time-series charts drawn as SVG by script (no library): an area and a line over the last
// minutes, with the latest value and the scale written as text beside the drawing.

import { formatNumber } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 300;
const HEIGHT = 80;

function svgElement(name, attributes = {}) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  return element;
}

/** A "nice" upper bound for an axis: 1, 2, 5 × 10^n at or above `value`. */
export function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

/** A chart inside `figure` (which holds its figcaption); `update(points)` redraws it. */
export class TimeChart {
  constructor(figure, { windowSeconds = 300, format = formatNumber } = {}) {
    this.windowSeconds = windowSeconds;
    this.format = format;
    this.current = document.createElement("span");
    this.current.className = "chart-current";
    figure.querySelector("figcaption").append(" ", this.current);

    const frame = document.createElement("div");
    frame.className = "chart-frame";
    this.maxLabel = document.createElement("span");
    this.maxLabel.className = "chart-max";
    this.svg = svgElement("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: "none", role: "img" });
    for (const y of [0, HEIGHT / 2]) {
      this.svg.append(svgElement("line", { x1: 0, x2: WIDTH, y1: y + 0.5, y2: y + 0.5, class: "grid" }));
    }
    this.area = svgElement("path", { class: "area" });
    this.line = svgElement("path", { class: "line", "vector-effect": "non-scaling-stroke" });
    this.svg.append(this.area, this.line);
    const axis = document.createElement("div");
    axis.className = "chart-axis";
    this.startLabel = document.createElement("span");
    const now = document.createElement("span");
    now.textContent = "now";
    axis.append(this.startLabel, now);
    frame.append(this.maxLabel, this.svg, axis);
    figure.append(frame);
  }

  /** `points`: [{t (seconds), value}] oldest first. */
  update(points) {
    const last = points.at(-1);
    this.current.textContent = last ? this.format(last.value) : "";
    if (!last) {
      this.area.setAttribute("d", "");
      this.line.setAttribute("d", "");
      this.maxLabel.textContent = "";
      return;
    }
    const max = niceMax(Math.max(...points.map((p) => p.value)));
    this.maxLabel.textContent = this.format(max);
    this.svg.setAttribute("aria-label", `${points.length} points, latest ${this.format(last.value)}, scale up to ${this.format(max)}`);
    // A young server has less history than the window: the chart spans what there is (at least a minute).
    const span = Math.min(this.windowSeconds, Math.max(60, last.t - points[0].t));
    this.startLabel.textContent = `${Math.round(span / 60)} min ago`;
    const start = last.t - span;
    const x = (t) => ((t - start) / span) * WIDTH;
    const y = (value) => HEIGHT - (value / max) * (HEIGHT - 2) - 1;
    const coordinates = points.filter((p) => p.t >= start).map((p) => `${x(p.t).toFixed(1)},${y(p.value).toFixed(1)}`);
    if (coordinates.length === 0) return;
    const line = "M" + coordinates.join("L");
    this.line.setAttribute("d", line);
    const firstX = coordinates[0].split(",")[0];
    this.area.setAttribute("d", `${line}L${x(last.t).toFixed(1)},${HEIGHT}L${firstX},${HEIGHT}Z`);
  }
}
