// Waiting for a condition, never for a time: what the mesh settles in the background (leases given
// back, usage folded, credits applied) is read again until it holds or a generous deadline passes.
// The one poll loop of the suite (tools/checks/test-timing.ts lets a timer stand here unmarked).

/**
 * `read()` once its answer is `want` (or satisfies it, given a predicate), else its last answer after
 * `ms`; the caller's assertion then says what it was. `every`: the pause between reads.
 */
export async function eventually<T>(
  read: () => Promise<T> | T,
  want: T | ((value: T) => boolean),
  ms = 30_000,
  every = 250,
): Promise<T> {
  const ok = typeof want === "function" ? (want as (value: T) => boolean) : (v: T) => v === want;
  const until = Date.now() + ms;
  let got = await read();
  while (!ok(got) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, every));
    got = await read();
  }
  return got;
}

/** `eventually` for a condition that must hold: throws, naming `what`, when it does not by `ms`. */
export async function until(what: string, check: () => Promise<boolean> | boolean, ms = 30_000, every = 100) {
  if (!(await eventually(check, true, ms, every))) throw new Error(`not within ${ms} ms: ${what}`);
}

/**
 * A pause of `ms`, for the few waits that are about time itself (pacing a client, holding a fault
 * open, a window in which something must not happen): each call carries a `// time-based:` comment.
 */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `read()`'s first answer that satisfies `done`; throws, naming `what` and its last answer, after `ms`. */
export async function awaitValue<T>(
  what: string,
  read: () => Promise<T> | T,
  done: (value: T) => boolean,
  ms = 30_000,
  every = 250,
): Promise<T> {
  const got = await eventually(read, done, ms, every);
  if (!done(got)) {
    const shown = JSON.stringify(got, (_, x) => (typeof x === "bigint" ? String(x) : x));
    throw new Error(`${what}: still ${shown} after ${ms} ms`);
  }
  return got;
}
