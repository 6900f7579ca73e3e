import { API, ApiError, api, status } from "./app.js";

const button = document.getElementById("sign-in");

function hex(text) {
  return `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function signIn() {
  const wallet = window.ethereum;
  if (!wallet) {
    status(
      "sign-in-status",
      "No wallet found. Install or unlock a browser wallet (EIP-1193), then try again.",
      true,
    );
    return;
  }
  button.disabled = true;
  try {
    status("sign-in-status", "Asking your wallet for its address…");
    const [address] = await wallet.request({ method: "eth_requestAccounts" });
    if (!address) throw new Error("the wallet shared no address");
    const { message } = await api("POST", "/nonce", { address });
    status("sign-in-status", "Sign the message in your wallet…");
    const signature = await wallet.request({ method: "personal_sign", params: [hex(message), address] });
    const session = await api("POST", "/sign-in", { message, signature });
    status(
      "sign-in-status",
      session.created ? "Account created. Opening your keys…" : "Signed in. Opening your keys…",
    );
    location.assign("/keys");
  } catch (err) {
    const text = err instanceof ApiError ? err.message : `Sign-in did not finish: ${err?.message ?? err}`;
    status("sign-in-status", text, true);
    button.disabled = false;
  }
}

button.addEventListener("click", signIn);
// The free plan as quota-meter enforces it (the figures are the operator's, never the page's).
api("GET", "/plans")
  .then((p) => {
    document.getElementById("free-plan").textContent = p.free_summary;
    document.getElementById("sign-up-note").textContent = !p.sign_up_open
      ? "Sign-up is closed right now: only wallets that already have an account can sign in."
      : p.sign_ups_per_hour
        ? `One network address can open at most ${p.sign_ups_per_hour} new accounts an hour.`
        : "";
  })
  .catch(() => undefined);
// Already signed in: straight to the keys.
fetch(`${API}/session`, { credentials: "same-origin" }).then((r) => {
  if (r.ok) location.assign("/keys");
});
