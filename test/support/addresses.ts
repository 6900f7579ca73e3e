/**
 * An expected answer as the API gives it: every address lower-case (the one casing it
 * echoes, whatever casing was sent; see the README's Choices).
 */
export function lower<T>(value: T): T {
  if (typeof value === "string")
    return (/^0x[0-9a-fA-F]{40}$/.test(value) ? value.toLowerCase() : value) as T;
  if (Array.isArray(value)) return value.map(lower) as T;
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, lower(v)])) as T;
  }
  return value;
}
