/**
 * The JSON object of an on-chain `data:application/json` URI (RFC 2397: base64, or percent-encoded
 * or raw text as many contracts write it), else null: any other URI, or text that is not a JSON
 * object. Pure, so the NFT metadata operation never fetches anything.
 */
export function jsonFromDataUri(uri: string): Record<string, unknown> | null {
  const match = /^data:application\/json((?:;[^,]*)?),(.*)$/is.exec(uri);
  if (!match) return null;
  const [, params = "", payload = ""] = match;
  let text: string;
  if (/;base64$/i.test(params)) {
    text = Buffer.from(payload, "base64").toString("utf8");
  } else {
    try {
      text = decodeURIComponent(payload);
    } catch {
      text = payload; // raw JSON with a stray %
    }
  }
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
