/**
 * The one redaction of the mesh. Two layers:
 *
 * - `redactUrl` is what a log line shows of a configured location (Redis, NATS, a node, a
 *   facilitator): scheme, host and port; never user, password, path or query, where
 *   providers put keys.
 * - Every secret read through `readSecret` (tokens, the pepper, private keys, and the URLs
 *   that may carry credentials) is remembered here, and every line the logger writes is
 *   scrubbed of them (libs/platform/src/logger.ts). So a library error message that quotes
 *   a URL or a key cannot carry it to the logs either.
 */

/** What replaces a secret in a log line. */
const REDACTED = "[redacted]";

/** Shorter strings are not remembered as whole values: they would blank out ordinary words. */
const MIN_SECRET_LENGTH = 6;
/** URL parts (path segments, query values) at least this long are treated as possible keys. */
const MIN_KEY_PART_LENGTH = 12;

const remembered = new Set<string>();
/** Longest first, so a secret that contains another is replaced whole. */
let ordered: string[] = [];

function add(value: string | undefined, min = MIN_SECRET_LENGTH): void {
  if (!value || value.length < min || remembered.has(value)) return;
  remembered.add(value);
  // As it appears inside a JSON log line, when escaping changes it.
  const escaped = JSON.stringify(value).slice(1, -1);
  if (escaped !== value) remembered.add(escaped);
  ordered = [...remembered].sort((a, b) => b.length - a.length);
}

function decoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The parts of a URL that may be a credential: user/password, key-like path segments and query values. */
function rememberUrlParts(text: string): void {
  const url = URL.parse(text);
  if (!url?.host) return;
  // With a password the user name is usually an account name; without one it is the token.
  for (const part of url.password ? [url.password] : [url.username]) {
    add(part);
    add(decoded(part));
  }
  if (url.pathname.length > 1 || url.search) add(`${url.pathname}${url.search}`, MIN_KEY_PART_LENGTH);
  for (const segment of url.pathname.split("/")) {
    add(segment, MIN_KEY_PART_LENGTH);
    add(decoded(segment), MIN_KEY_PART_LENGTH);
  }
  for (const [, value] of url.searchParams) add(value, MIN_KEY_PART_LENGTH);
}

/**
 * Remembers a secret so no log line ever shows it. A URL (or a comma-separated list of
 * them) is remembered whole and by its credential-like parts.
 */
export function rememberSecret(value: string): void {
  add(value);
  if (value.startsWith("0x")) add(value.slice(2));
  for (const item of value.split(",")) {
    const trimmed = item.trim();
    if (trimmed !== value) add(trimmed);
    if (trimmed.includes("://")) rememberUrlParts(trimmed);
  }
}

/** `scheme://user:password@` in free text (a URL quoted by a library's error message). */
const USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@"'<>]+@/gi;

/** Text fit for a log: every remembered secret and every URL's user info replaced. */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const secret of ordered) {
    if (out.includes(secret)) out = out.replaceAll(secret, REDACTED);
  }
  return out.includes("@") ? out.replace(USERINFO, "$1***@") : out;
}

/**
 * A configured location fit for a log line: `redis://***@host:6379/…`. The host and port
 * say which server; credentials, path and query (where node providers put API keys) are cut.
 */
export function redactUrl(text: string): string {
  const url = URL.parse(text);
  if (!url?.host) return "[unparsable URL]";
  const auth = url.username || url.password ? "***@" : "";
  const rest = url.pathname.length > 1 || url.search ? "/…" : "";
  return `${url.protocol}//${auth}${url.host}${rest}`;
}

/** Base64 and base64url runs long enough to carry a secret (PAYMENT-REQUIRED is base64 JSON). */
const ENCODED_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}/g;

/** An encoded run with every remembered secret scrubbed inside it, re-encoded the same way. */
function scrubEncoded(run: string): string {
  const encoding = run.includes("-") || run.includes("_") ? "base64url" : "base64";
  const decoded = Buffer.from(run, encoding).toString("utf8");
  const clean = scrubSecrets(decoded);
  if (clean === decoded) return run;
  const out = Buffer.from(clean, "utf8").toString(encoding);
  return run.endsWith("=") ? out : out.replace(/=+$/, "");
}

/**
 * Text fit for a client, redacted as log lines are (`scrubSecrets`), and also inside the base64 and
 * base64url runs it carries: a header such as x402's PAYMENT-REQUIRED is base64 JSON whose `error`
 * may quote a library's message (and the node URL in it). A run that carries no secret is left as
 * it was, byte for byte, so a signed or hashed value is never altered.
 */
export function redactForClient(text: string): string {
  if (text.length === 0) return text;
  return scrubSecrets(text).replace(ENCODED_RUN, scrubEncoded);
}
