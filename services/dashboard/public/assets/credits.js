import { ApiError, api, el, requireSession, status } from "./app.js";
import { dayBars } from "./chart.js";

const usd = (s) => `${s} USDC`;

/** Top-ups and draws per day; amounts are exact decimal strings, drawn as numbers. */
function chart(days) {
  const rows = days.map((d) => ({ day: d.day, topUps: Number(d.top_ups_usdc), draws: Number(d.draws_usdc) }));
  const sum = (k) => rows.reduce((s, d) => s + d[k], 0);
  return dayBars(
    rows,
    [
      { key: "topUps", colour: "#1d6b2f", label: "USDC topped up" },
      { key: "draws", colour: "#0b5cad", label: "USDC drawn" },
    ],
    {
      labelledBy: "credits-chart-title",
      describe: `${sum("topUps")} USDC topped up and ${sum("draws")} USDC drawn over ${rows.length} days.`,
      format: (v) => String(Math.round(v * 100) / 100),
      top: (max) => (max > 0 ? max : 1),
    },
  );
}

/** The top-up buttons: each pays its amount from the signed-in wallet with x402, in this browser. */
function topUpButtons(credits, session) {
  const { gateway_url: gateway, path, amounts_usdc: amounts } = credits.top_up;
  const box = document.getElementById("top-up");
  const elsewhere = document.getElementById("top-up-elsewhere");
  if (!gateway || !globalThis.ethereum) {
    box.hidden = true;
    elsewhere.hidden = false;
    elsewhere.textContent = gateway
      ? `No wallet in this browser: pay POST ${gateway}${path}?amount=${amounts.join("|")} with an x402 or MPP client from ${session.account.address}.`
      : `Pay POST ${path}?amount=${amounts.join("|")} on the gateway with an x402 or MPP client from this wallet.`;
    return;
  }
  const buttons = amounts.map((amount) => {
    const b = el("button", { type: "button", text: `Top up ${amount} USDC` });
    b.onclick = async () => {
      for (const other of buttons) other.disabled = true;
      status("top-up-status", `Asking your wallet to sign a payment of ${amount} USDC…`);
      try {
        const { topUp } = await import("./generated/x402-top-up.js");
        const r = await topUp(globalThis.ethereum, session.account.address, gateway, path, amount);
        if (r.status !== 200) throw new Error(r.error?.message ?? `the gateway answered ${r.status}`);
        status(
          "top-up-status",
          `Credited ${usd(r.data.credited_usdc)}; the balance is ${usd(r.data.balance_usdc)}.${r.transaction ? ` Transaction ${r.transaction}.` : ""}`,
        );
        await render();
      } catch (err) {
        status("top-up-status", `Top-up failed: ${err instanceof Error ? err.message : String(err)}`, true);
      } finally {
        for (const other of buttons) other.disabled = false;
      }
    };
    return b;
  });
  document.getElementById("top-up-buttons").replaceChildren(...buttons);
}

async function render() {
  const c = await api("GET", "/credits");
  document.getElementById("balance").textContent = usd(c.balance_usdc);
  document.getElementById("credits-mode").textContent = c.credits_only
    ? "This account's plan is credits-only: every call with its API keys draws its price from the balance."
    : "Calls with this account's API keys draw their price from the balance once the plan's daily or monthly window is spent (instead of a 429).";
  document.getElementById("credits-chart").replaceChildren(chart(c.days));
  document
    .getElementById("credit-days")
    .replaceChildren(
      ...c.days.map((d) =>
        el(
          "tr",
          {},
          el("td", { "data-label": "Day", text: d.day }),
          el("td", { "data-label": "Top-ups (USDC)", text: d.top_ups_usdc }),
          el("td", { "data-label": "Draws (USDC)", text: d.draws_usdc }),
          el("td", { "data-label": "Refunds (USDC)", text: d.refunds_usdc }),
        ),
      ),
    );
  status("credits-status", "");
  return c;
}

const session = await requireSession();
await render()
  .then((c) => topUpButtons(c, session))
  .catch((err) => status("credits-status", err instanceof ApiError ? err.message : String(err), true));
