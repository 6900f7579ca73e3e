// What every page shares: the JSON API (session cookie + CSRF header), the header, status lines.
export const API = "/api/dashboard";

let csrf = "";

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `request failed (${status})`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

export async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && csrf) headers["x-csrf-token"] = csrf;
  const res = await fetch(API + path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json().catch(() => undefined);
  if (!res.ok) throw new ApiError(res.status, json);
  return json.data;
}

/** The session, or a trip to the sign-in page. */
export async function requireSession() {
  try {
    const session = await api("GET", "/session");
    csrf = session.csrf_token;
    showAccount(session.account);
    return session;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      location.assign("/");
      return new Promise(() => {});
    }
    throw err;
  }
}

function showAccount(account) {
  const who = document.getElementById("who");
  if (who) who.textContent = `${account.address.slice(0, 6)}…${account.address.slice(-4)}`;
  const out = document.getElementById("sign-out");
  if (out) {
    out.hidden = false;
    out.onclick = async () => {
      await api("POST", "/sign-out").catch(() => undefined);
      location.assign("/");
    };
  }
}

export function status(id, text, isError = false) {
  const el = document.getElementById(id);
  el.textContent = text;
  el.classList.toggle("error", isError);
}

export function when(iso) {
  if (!iso) return "never";
  const d = new Date(iso);
  return `${d.toISOString().replace("T", " ").slice(0, 16)} UTC`;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}
