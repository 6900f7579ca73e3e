import { ApiError, api, el, requireSession, status } from "./app.js";

const SVG = "http://www.w3.org/2000/svg";
const n = (v) => v.toLocaleString("en-US");

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Paired bars per day (calls, errors), drawn as inline SVG: nothing loaded from elsewhere. */
function chart(days) {
  const W = 720;
  const H = 240;
  const pad = { l: 48, r: 8, t: 10, b: 36 };
  // Gridlines at 0, half and the top, all whole numbers.
  const max = 2 * Math.ceil(Math.max(1, ...days.map((d) => d.calls)) / 2);
  const step = (W - pad.l - pad.r) / days.length;
  const bar = Math.max(1, step / 2 - 1);
  const y = (v) => H - pad.b - ((H - pad.t - pad.b) * v) / max;
  const root = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    role: "img",
    "aria-labelledby": "chart-title chart-desc",
  });
  const total = days.reduce((s, d) => s + d.calls, 0);
  const errors = days.reduce((s, d) => s + d.errors, 0);
  root.append(
    svg("desc", { id: "chart-desc" }, `${n(total)} calls and ${n(errors)} errors over ${days.length} days.`),
  );
  for (const f of [0, 0.5, 1]) {
    const v = Math.round(max * f);
    root.append(svg("line", { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v), stroke: "#c9c9c4" }));
    root.append(
      svg(
        "text",
        { x: pad.l - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#4a4a4a" },
        n(v),
      ),
    );
  }
  days.forEach((d, i) => {
    const x = pad.l + i * step;
    const g = svg("g", {});
    g.append(svg("title", {}, `${d.day}: ${n(d.calls)} calls, ${n(d.errors)} errors`));
    g.append(svg("rect", { x, y: y(d.calls), width: bar, height: y(0) - y(d.calls), fill: "#0b5cad" }));
    g.append(
      svg("rect", {
        x: x + bar + 1,
        y: y(d.errors),
        width: bar,
        height: y(0) - y(d.errors),
        fill: "#a4161a",
      }),
    );
    root.append(g);
    if (i % 5 === 0 || i === days.length - 1) {
      root.append(
        svg(
          "text",
          { x: x + bar, y: H - pad.b + 16, "text-anchor": "middle", "font-size": 11, fill: "#4a4a4a" },
          d.day.slice(5),
        ),
      );
    }
  });
  return root;
}

function meter(kind, w) {
  document.getElementById(`${kind}-window`).textContent = `(${w.window})`;
  const bar = document.getElementById(`${kind}-bar`);
  if (w.limit === null) {
    document.getElementById(`${kind}-figure`).textContent =
      w.used === null ? "Uncapped" : `${n(w.used)} calls`;
    bar.hidden = true;
    return;
  }
  const used = w.used ?? 0;
  document.getElementById(`${kind}-figure`).textContent = `${n(used)} of ${n(w.limit)} calls`;
  bar.max = w.limit;
  bar.value = Math.min(used, w.limit);
  bar.setAttribute("aria-valuetext", `${n(used)} of ${n(w.limit)} calls`);
}

const MEANING = {
  active: "Active: keys are served until a quota window is spent.",
  past_due:
    "Past due: calls with your keys get 403 subscription_inactive (check the subscription, or pay per call with x402 or MPP).",
  canceled:
    "Canceled: calls with your keys get 403 subscription_inactive; pay per call with x402 or MPP instead.",
  suspended:
    "Suspended: calls with your keys get 403 subscription_inactive until the operator reactivates the account.",
};

async function render() {
  const u = await api("GET", "/usage");
  meter("today", u.today);
  meter("month", u.month);
  const limit = (v) => (v === 0 ? "uncapped" : `${n(v)} calls`);
  document.getElementById("plan-name").textContent =
    u.plan.name === "free" ? "Free (self-serve sign-up)" : "Standard (set by the operator)";
  document.getElementById("plan-more").hidden = u.plan.name !== "free";
  document.getElementById("sub-status").textContent = u.account.status;
  document.getElementById("plan-daily").textContent = limit(u.plan.daily_limit);
  document.getElementById("plan-monthly").textContent = limit(u.plan.monthly_limit);
  document.getElementById("plan-burst").textContent =
    u.plan.burst_per_second === 0 ? "none" : `${n(u.plan.burst_per_second)} calls per second`;
  document.getElementById("sub-meaning").textContent =
    `${MEANING[u.account.status] ?? ""} A 403 on a call means the subscription behind the key is not active.`;
  document.getElementById("chart").replaceChildren(chart(u.days));
  document
    .getElementById("days")
    .replaceChildren(
      ...u.days.map((d) =>
        el(
          "tr",
          {},
          el("td", { text: d.day }),
          el("td", { text: n(d.calls) }),
          el("td", { text: n(d.errors) }),
        ),
      ),
    );
  status("usage-status", "");
}

await requireSession();
await render().catch((err) =>
  status("usage-status", err instanceof ApiError ? err.message : String(err), true),
);
