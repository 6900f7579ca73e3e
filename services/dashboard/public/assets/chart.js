// Grouped bars per day as inline SVG (nothing loaded from elsewhere): the usage and credits pages.
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * One group of bars per day: `series` is [{key, colour, label}], each day an object with those keys
 * (numbers). `format` writes a value; `describe` is the chart's text alternative; `labelledBy` the id
 * of its title. Gridlines at 0, half and the top.
 */
export function dayBars(days, series, { labelledBy, describe, format, top = (max) => max }) {
  const W = 720;
  const H = 240;
  const pad = { l: 56, r: 8, t: 10, b: 36 };
  const max = top(Math.max(...days.flatMap((d) => series.map((s) => d[s.key]))));
  const step = (W - pad.l - pad.r) / days.length;
  const bar = Math.max(1, step / series.length - 1);
  const y = (v) => H - pad.b - ((H - pad.t - pad.b) * v) / max;
  const descId = `${labelledBy}-desc`;
  const root = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    role: "img",
    "aria-labelledby": `${labelledBy} ${descId}`,
  });
  root.append(svg("desc", { id: descId }, describe));
  for (const f of [0, 0.5, 1]) {
    const v = max * f;
    root.append(svg("line", { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v), stroke: "#c9c9c4" }));
    root.append(
      svg(
        "text",
        { x: pad.l - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#4a4a4a" },
        format(v),
      ),
    );
  }
  days.forEach((d, i) => {
    const x = pad.l + i * step;
    const g = svg("g", {});
    g.append(svg("title", {}, `${d.day}: ${series.map((s) => `${format(d[s.key])} ${s.label}`).join(", ")}`));
    series.forEach((s, j) => {
      const v = d[s.key];
      g.append(
        svg("rect", { x: x + j * (bar + 1), y: y(v), width: bar, height: y(0) - y(v), fill: s.colour }),
      );
    });
    root.append(g);
    if (i % 5 === 0 || i === days.length - 1) {
      root.append(
        svg(
          "text",
          {
            x: x + (series.length * bar) / 2,
            y: H - pad.b + 16,
            "text-anchor": "middle",
            "font-size": 11,
            fill: "#4a4a4a",
          },
          d.day.slice(5),
        ),
      );
    }
  });
  return root;
}
