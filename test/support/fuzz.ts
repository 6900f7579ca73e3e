// Hostile input for the fuzz suites (fast-check arbitraries) and the rules every answer to it
// is held to.
import { ERRORS, isErrorCode, LIMIT_ERRORS } from "@tollgate/catalog";
import fc from "fast-check";
import { expect } from "vitest";
import { A, devnet } from "./devnet.ts";
import { assertConforms } from "./openapi.ts";

const demo = devnet.demo.ethereum;

export interface Answer {
  status: number;
  headers: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: checked against /openapi.json by assertConforms
  body: any;
  text: string;
}

/** Strings an attacker or a buggy client sends. */
const NASTY = [
  "",
  " ",
  "%00",
  "\u0000",
  "\uFEFF",
  "\u202E0xdead",
  "∞",
  "🦊.eth",
  "𝕏".repeat(100),
  "__proto__",
  "constructor",
  "prototype",
  "0x",
  "0X00",
  "-1",
  "-0",
  "1e309",
  "NaN",
  "Infinity",
  "null",
  "true",
  "[]",
  "{}",
  "../../etc/passwd",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "$" + "{jndi:ldap://x}",
  "latest\nearliest",
  A,
  A.toUpperCase(),
  // Addresses a loose pattern takes and viem's EIP-712 hashing refuses (all caps, a bad checksum).
  `0x${A.slice(2).toUpperCase()}`,
  `0x${A.slice(2, 8).toUpperCase()}${A.slice(8).toLowerCase()}`,
  demo.erc20.address,
  "0x".padEnd(66, "f"),
  "18446744073709551616",
  "115792089237316195423570985008687907853269984665640564039457584007913129639936",
  "9".repeat(78),
];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...NASTY),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.stringMatching(/^0x[0-9a-fA-FxX]{0,90}$/),
  fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }).map(String),
  fc.double().map(String),
  fc
    .tuple(fc.constantFrom("f", "9", "a", "é", "🦊"), fc.integer({ min: 1_000, max: 20_000 }))
    .map(([c, n]) => c.repeat(n)),
);

/** A JSON value nested `depth` levels deep, as text (JSON.stringify would recurse). */
export const deepJson = (depth: number, open = "[", close = "]") =>
  `${open.repeat(depth)}${close.repeat(depth)}`;
export const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.jsonValue({ maxDepth: 4 }),
  fc.constantFrom(
    0,
    -1,
    2 ** 41,
    1e308,
    -1e-308,
    true,
    false,
    null,
    [],
    [[]],
    { a: 1 },
    { __proto__: { x: 1 } },
  ),
);

/** Percent-encodes anything, lone surrogates included (encodeURIComponent throws on those). */
export const encode = (s: string) => {
  try {
    return encodeURIComponent(s);
  } catch {
    return [...Buffer.from(s, "utf8")].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
  }
};

/** Reads an answer whatever its type, and checks a JSON one against /openapi.json. */
export async function answerOf(method: string, url: string, res: Response): Promise<Answer> {
  const text = await res.text();
  const answer: Answer = {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: undefined,
    text,
  };
  if ((res.headers.get("content-type") ?? "").includes("application/json")) answer.body = JSON.parse(text);
  await assertConforms(method.toLowerCase(), url.split("?")[0] ?? url, answer as never);
  return answer;
}

/**
 * The refusal rules every hostile call is held to: no 5xx; a 4xx is the envelope with a catalog
 * code at its own status (429: the flat shape); a parameter refusal names a parameter.
 */
export function expectWellRefused(answer: Answer, context: string, names: readonly string[] = []): void {
  const why = `${context} → ${answer.status} ${answer.text.slice(0, 300)}`;
  expect(answer.status, why).toBeLessThan(500);
  if (answer.status < 400) return;
  if (answer.status === 429) {
    expect(Object.keys(LIMIT_ERRORS), why).toContain(answer.body.error);
    return;
  }
  expect(answer.body?.data, why).toBeNull();
  const code = answer.body?.error?.code as string | undefined;
  expect(isErrorCode(code), why).toBe(true);
  expect(ERRORS[code as keyof typeof ERRORS].status, why).toBe(answer.status);
  expect(typeof answer.body.error.message, why).toBe("string");
  expect(answer.body.error.message.length, why).toBeGreaterThan(0);
  expect(typeof answer.body.meta?.request_id, why).toBe("string");
  if (code === "invalid_parameter" || code === "unknown_parameter") {
    const message: string = answer.body.error.message;
    // The server reads a lone surrogate as U+FFFD, so the name it quotes is the well-formed one.
    const named = names.some((n) => message.startsWith(`${n.toWellFormed()}: `));
    expect(names.length === 0 || named, `${why}: names none of the parameters sent`).toBe(true);
  }
}
