import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type Logger, redactUrl } from "@tollgate/platform";

export interface NatsKeeperOptions {
  /** NATS_URL: one server, or a cluster's servers separated by commas (any one of them is enough to start). */
  natsUrl: string;
  /** Connection name shown by the server (e.g. "quota-meter-events"). */
  name: string;
  logger: Logger;
  /** The one line logged when NATS cannot be reached: what happens meanwhile. */
  unreachableMessage: string;
  /** Log reachability changes at debug level (another component already tells the story). */
  quiet?: boolean;
  /** Pause between reconnect attempts. */
  reconnectWaitMs?: number;
  /** Called on every (re)connect, before `current()` reports the connection. */
  onConnect?: (nc: NatsConnection) => Promise<void>;
  /** Called on every (re)connect, once `current()` reports the connection. */
  onUp?: () => void;
}

/** NATS_URL's servers: `nats://a:4222,nats://b:4222` (a cluster's seeds; the client learns the rest). */
function natsServers(natsUrl: string): string[] {
  return natsUrl
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** NATS_URL for a log line: each server's URL without its credentials. */
export function redactNatsUrl(natsUrl: string): string {
  return natsServers(natsUrl).map(redactUrl).join(",");
}

/** A NATS connection kept open for the life of the process, whenever NATS is reachable. */
export interface NatsKeeper {
  /** The connection while it is up (not while reconnecting). */
  current(): NatsConnection | undefined;
  /** Resolves at the next moment the connection is up (at once if it is). */
  ready(): Promise<NatsConnection>;
  close(): Promise<void>;
}

/**
 * Connects in the background and never gives up: neither an unreachable server at
 * startup nor a lost connection later is an error for the caller, only a state that
 * `current()` reports and the log names once.
 */
export function keepNatsConnection(opts: NatsKeeperOptions): NatsKeeper {
  const wait = opts.reconnectWaitMs ?? 1_000;
  const servers = natsServers(opts.natsUrl);
  const natsUrl = redactNatsUrl(opts.natsUrl);
  const warn = (msg: string) => opts.logger[opts.quiet ? "debug" : "warn"]({ natsUrl }, msg);
  const info = (msg: string) => opts.logger[opts.quiet ? "debug" : "info"]({ natsUrl }, msg);
  let nc: NatsConnection | undefined;
  let up = false;
  let closed = false;
  let waiters: Array<{ resolve: (nc: NatsConnection) => void; reject: (err: Error) => void }> = [];
  let wake: (() => void) | undefined;

  const becameUp = async (conn: NatsConnection) => {
    try {
      await opts.onConnect?.(conn);
    } catch (err) {
      if (closed) return;
      opts.logger.warn({ err }, "NATS setup after connect failed; it is retried");
    }
    if (closed || conn.isClosed()) return;
    up = true;
    const ready = waiters;
    waiters = [];
    for (const w of ready) w.resolve(conn);
    opts.onUp?.();
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const run = async () => {
    let warned = false;
    let attempt = 0;
    while (!closed) {
      let conn: NatsConnection;
      try {
        conn = await connect({
          servers,
          name: opts.name,
          maxReconnectAttempts: -1,
          reconnectTimeWait: wait,
          timeout: 2_000,
          pingInterval: 10_000,
          maxPingOut: 2,
          // No error object per request (each JetStream publish is one) kept for a stack trace.
          noAsyncTraces: true,
        });
      } catch {
        if (!warned) {
          warned = true;
          warn(opts.unreachableMessage);
        }
        await sleep(Math.min(wait * 2 ** attempt++, 5_000));
        continue;
      }
      if (closed) {
        await conn.close();
        return;
      }
      attempt = 0;
      nc = conn;
      if (warned) info("NATS is reachable again");
      warned = false;
      // Subscribe to status changes before anything can close the connection, so the
      // loop below always ends when it closes.
      const statuses = conn.status();
      await becameUp(conn);
      if (closed) break;
      for await (const status of statuses) {
        if (status.type === "disconnect") {
          up = false;
          if (!warned) {
            warned = true;
            warn(opts.unreachableMessage);
          }
        } else if (status.type === "reconnect") {
          if (warned) info("NATS is reachable again");
          warned = false;
          await becameUp(conn);
        }
      }
      up = false;
      nc = undefined;
    }
  };
  const done = run().catch((err: unknown) => opts.logger.error({ err }, "NATS connection keeper stopped"));

  return {
    current: () => (up ? nc : undefined),
    ready: () => {
      if (closed) return Promise.reject(new Error("NATS connection closed"));
      if (up && nc) return Promise.resolve(nc);
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    close: async () => {
      closed = true;
      wake?.();
      for (const w of waiters) w.reject(new Error("NATS connection closed"));
      waiters = [];
      const conn = nc;
      const wasUp = up;
      up = false;
      if (conn && !conn.isClosed()) {
        // Drain (finish in-flight work) only when connected; it cannot complete otherwise.
        const drained = wasUp ? conn.drain() : conn.close();
        const timeout = new Promise<void>((resolve) => setTimeout(resolve, 3_000).unref());
        await Promise.race([drained.catch(() => undefined), timeout]);
        if (!conn.isClosed()) await conn.close();
      }
      await done;
    },
  };
}
