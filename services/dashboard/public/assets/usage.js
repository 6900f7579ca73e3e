import { ApiError, api, el, requireSession, status } from "./app.js";
import { dayBars } from "./chart.js";

const n = (v) => v.toLocaleString("en-US");

/** Paired bars per day (calls, errors). */
function chart(days) {
  const total = days.reduce((s, d) => s + d.calls, 0);
  const errors = days.reduce((s, d) => s + d.errors, 0);
  return dayBars(
    days,
    [
      { key: "calls", colour: "#0b5cad", label: "calls" },
      { key: "errors", colour: "#a4161a", label: "errors" },
    ],
    {
      labelledBy: "chart-title",
      describe: `${n(total)} calls and ${n(errors)} errors over ${days.length} days.`,
      format: (v) => n(Math.round(v)),
      // Gridlines at 0, half and the top, all whole numbers.
      top: (max) => 2 * Math.ceil(Math.max(1, max) / 2),
    },
  );
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
