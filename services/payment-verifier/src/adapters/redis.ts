// Redis connection for the reservation store. Reachability is decided once at startup; after that
// commands fail fast while the connection is down (no offline queue), so a payment is refused with
// service_unavailable instead of waiting or being served without replay protection.
import { type Logger, redactUrl } from "@tollgate/platform";
import { createClient } from "redis";

function newClient(url: string, timeoutMs: number, isConnected: () => boolean) {
  return createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: timeoutMs,
      // Before the first connection: give up (startup decides on a stand-in). After it: back off
      // and keep trying, capped at 2 s.
      reconnectStrategy: (retries, cause) => (isConnected() ? Math.min(50 * 2 ** retries, 2_000) : cause),
    },
  });
}

export type Redis = ReturnType<typeof newClient>;

/**
 * Connects to `url`, or resolves undefined when Redis cannot be reached within `timeoutMs` (the
 * caller then falls back to a single-node store).
 */
export async function connectRedis(
  url: string,
  logger: Logger,
  timeoutMs = 2_000,
): Promise<Redis | undefined> {
  let connected = false;
  const client = newClient(url, timeoutMs, () => connected);
  let lastError = "";
  client.on("error", (err: Error) => {
    // The client emits an error per failed reconnect attempt; log each distinct one once.
    if (connected && err.message !== lastError) {
      logger.warn({ url: redactUrl(url), err: err.message }, "redis connection error");
    }
    lastError = err.message;
  });
  client.on("ready", () => {
    if (connected && lastError) logger.info("redis connection restored");
    lastError = "";
  });
  try {
    await withTimeout(client.connect(), timeoutMs + 500);
    connected = true;
    return client;
  } catch {
    client.destroy();
    return undefined;
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("redis connect timed out")), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
