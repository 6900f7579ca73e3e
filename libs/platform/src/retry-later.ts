// Clean-ups that must land once the store they need answers again (a lock to let go, a grant to
// give back), kept by one loop per owner instead of a timer per item: every `everyMs` it tries the
// pending items in order, stops at the first failure (the store is still away: the rest wait for
// the next pass), and drops each item once done, past its deadline, or the oldest when too many wait.

export type RetryLater<T> = (key: string, item: T, until: number) => void;

/**
 * A retry loop for `attempt`: `later(key, item, until)` keeps `item` (one per key) until it lands.
 * At most `max` wait at a time (a long outage): past it the oldest is given up, as if it lapsed.
 */
export function retryLater<T>(
  attempt: (item: T) => Promise<unknown>,
  { everyMs = 250, max = 10_000 }: { everyMs?: number; max?: number } = {},
): RetryLater<T> {
  const pending = new Map<string, { item: T; until: number }>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = async () => {
    for (const [key, { item, until }] of pending) {
      if (Date.now() >= until) {
        pending.delete(key);
        continue;
      }
      try {
        await attempt(item);
        pending.delete(key);
      } catch {
        break;
      }
    }
    timer = undefined;
    if (pending.size > 0) schedule();
  };
  const schedule = () => {
    timer ??= setTimeout(run, everyMs);
    timer.unref();
  };
  return (key, item, until) => {
    if (pending.size >= max && !pending.has(key)) pending.delete(pending.keys().next().value as string);
    pending.set(key, { item, until });
    schedule();
  };
}
