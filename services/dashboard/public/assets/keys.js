import { ApiError, api, el, requireSession, status, when } from "./app.js";

const tbody = document.getElementById("keys");
const newKey = document.getElementById("new-key");
const secretInput = document.getElementById("secret");

function showSecret(secret, note) {
  secretInput.value = secret;
  newKey.hidden = false;
  secretInput.focus();
  secretInput.select();
  status("keys-status", note);
}

function fail(err) {
  status("keys-status", err instanceof ApiError ? err.message : String(err?.message ?? err), true);
}

async function render() {
  const { keys } = await api("GET", "/keys");
  tbody.replaceChildren();
  document.getElementById("no-keys").hidden = keys.length > 0;
  for (const key of keys) {
    const actions = el("div", { class: "actions" });
    if (!key.revoked_at) {
      const replace = el("button", {
        type: "button",
        class: "secondary",
        text: "Replace",
        "aria-label": `Replace key ${key.prefix}…`,
      });
      replace.onclick = async () => {
        try {
          const r = await api("POST", `/keys/${key.id}/replace`);
          showSecret(r.secret, `Key ${r.revoked.prefix}… was revoked; its replacement is below.`);
          await render();
        } catch (err) {
          fail(err);
        }
      };
      const revoke = el("button", {
        type: "button",
        class: "danger",
        text: "Revoke",
        "aria-label": `Revoke key ${key.prefix}…`,
      });
      revoke.onclick = async () => {
        if (!confirm(`Revoke ${key.prefix}…? Calls with it will get 401.`)) return;
        try {
          await api("POST", `/keys/${key.id}/revoke`);
          await render();
          status("keys-status", `Key ${key.prefix}… revoked.`);
        } catch (err) {
          fail(err);
        }
      };
      actions.append(replace, revoke);
    }
    tbody.append(
      el(
        "tr",
        { "data-key-id": key.id },
        el("td", { "data-label": "Key" }, el("code", { text: `${key.prefix}…` })),
        el("td", { "data-label": "Created", text: when(key.created_at) }),
        el("td", { "data-label": "Last used", text: when(key.last_used_at) }),
        el("td", {
          "data-label": "Status",
          text: key.revoked_at ? `Revoked ${when(key.revoked_at)}` : "Active",
        }),
        el("td", { "data-label": "Actions" }, actions),
      ),
    );
  }
}

document.getElementById("create").addEventListener("click", async () => {
  try {
    const r = await api("POST", "/keys");
    showSecret(r.secret, "Key created.");
    await render();
  } catch (err) {
    fail(err);
  }
});

document.getElementById("copy").addEventListener("click", async () => {
  try {
    await navigator.clipboard.writeText(secretInput.value);
    status("keys-status", "Copied to the clipboard.");
  } catch {
    secretInput.select();
    status("keys-status", "Copy did not work here: the key is selected, press Ctrl+C (or ⌘C).");
  }
});

await requireSession();
await render().catch(fail);
