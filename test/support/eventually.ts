// Waiting for a condition, never for a time: what the mesh settles in the background (leases given
// back, usage folded, credits applied) is read again until it holds or a generous deadline passes.

/**
 * `read()` once its answer is `want` (or satisfies it, given a predicate), else its last answer after
 * `ms`; the caller's assertion then says what it was.
 */
export async function eventually<T>(
  read: () => Promise<T>,
  want: T | ((value: T) => boolean),
  ms = 30_000,
): Promise<T> {
  const ok = typeof want === "function" ? (want as (value: T) => boolean) : (v: T) => v === want;
  const until = Date.now() + ms;
  let got = await read();
  while (!ok(got) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 250));
    got = await read();
  }
  return got;
}
