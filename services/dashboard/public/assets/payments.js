import { ApiError, api, el, requireSession, status, when } from "./app.js";

const WAYS = {
  exact: "x402 exact",
  "x402-batch": "x402 batch",
  "batch-settlement": "x402 batch",
  charge: "MPP charge",
  "mpp-charge": "MPP charge",
  session: "MPP session",
  "mpp-session": "MPP session",
};

const short = (hash) => `${hash.slice(0, 10)}…${hash.slice(-8)}`;

function transactionCell(p) {
  const td = el("td", { "data-label": "Transaction", class: "hash" });
  if (p.transaction && p.transaction_url) {
    td.append(
      el("a", {
        href: p.transaction_url,
        rel: "noopener noreferrer",
        target: "_blank",
        "aria-label": `Transaction ${p.transaction} on ${p.chain.name}'s explorer`,
        text: short(p.transaction),
      }),
    );
  } else if (p.transaction) {
    td.append(el("span", { title: p.transaction, text: short(p.transaction) }));
  } else {
    td.textContent = p.channel ? `charged to channel ${short(p.channel)}` : "—";
  }
  return td;
}

function row(p) {
  return el(
    "tr",
    {},
    el("td", { "data-label": "Time (UTC)", text: when(p.time) }),
    el("td", {
      "data-label": "Call",
      text: p.endpoint ? `${p.endpoint}${p.network ? ` (${p.network})` : ""}` : "—",
    }),
    el("td", { "data-label": "Paid with", text: WAYS[p.scheme] ?? `${p.protocol} ${p.scheme}` }),
    el("td", { "data-label": "Amount (USD)", text: p.amount }),
    el("td", { "data-label": "Chain", text: p.chain.name }),
    transactionCell(p),
  );
}

let cursor = null;

async function page(first) {
  const q = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
  const r = await api("GET", `/payments${q}`);
  const rows = r.payments.map(row);
  const body = document.getElementById("payments");
  if (first) body.replaceChildren(...rows);
  else body.append(...rows);
  cursor = r.next_cursor;
  document.getElementById("more").hidden = !cursor;
  document.getElementById("no-payments").hidden = body.children.length > 0;
  status("payments-status", "");
}

const fail = (err) => status("payments-status", err instanceof ApiError ? err.message : String(err), true);
document.getElementById("more").onclick = () => page(false).catch(fail);
await requireSession();
await page(true).catch(fail);
