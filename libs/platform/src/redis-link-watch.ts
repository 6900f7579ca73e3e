// The silent-link watch of a single Redis client (connectRedis): a PING on a schedule, and a
// second opinion on a link of its own when one goes unanswered.
import { connect as netConnect } from "node:net";
import { createClient, ErrorReply } from "@redis/client";
import { type ReplyWatchOptions, replyWatch } from "./reply-watch.ts";

/** What the watch needs of a client. */
interface Watched {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  ping(): Promise<unknown>;
  destroy(): void;
  connect(): Promise<unknown>;
}

/**
 * Gives up a link that no longer answers. node-redis puts no deadline on a sent command: on a link
 * that goes silent without a reset (a partition, a dropped NAT entry, a lost node) every command
 * sent waits for the kernel to give the connection up, minutes later. A PING goes out every 0.5 s;
 * one unanswered for 3 s (by default; noticed within 3.5 s) makes the link suspect, and a PING on a
 * link of its own (`askAnew`, at most 1.5 s) tells why: answered, this link alone is silent; no
 * connection at all, Redis is unreachable. Either way the client is destroyed, which fails every
 * command waiting on it as sent (DisconnectsClientError: `answerLost`, so the writers read back what
 * landed), and connected anew. Connected but unanswered, Redis itself is slow (a stall, a long
 * fsync): the link is kept, its commands still to be answered, and looked at again 3 s later.
 * Stops once the service itself closes the client.
 */
export function watchReplies(
  client: Watched,
  url: string,
  opts: ReplyWatchOptions,
  say: (verdict: "silent" | "unreachable" | "slow") => void,
): void {
  const watch = replyWatch(opts);
  const timer = setInterval(() => {
    if (!client.isOpen) {
      clearInterval(timer);
      return;
    }
    const step = watch.tick(performance.now(), client.isReady);
    if (step === "probe") {
      const token = watch.sent(performance.now());
      const settled = () => watch.settled(token);
      client.ping().then(settled, settled);
    } else if (step === "silent") {
      void askAnew(url, ASK_ANEW_MS).then(
        (verdict) => {
          // Still unanswered (a Redis that was only slow answers this link's commands first), and
          // ready: no reconnect of node-redis's own is under way, which a second connect would race.
          const stillWaiting = watch.waiting();
          const giveUp = verdict !== "slow" && stillWaiting && client.isOpen && client.isReady;
          watch.decided(performance.now(), !giveUp);
          if ((verdict === "slow" && stillWaiting) || giveUp) say(verdict);
          if (!giveUp) return;
          client.destroy();
          client.connect().catch(() => undefined);
        },
        // No verdict: keep the link and look again later, as for a slow Redis.
        () => watch.decided(performance.now(), true),
      );
    }
  }, opts.everyMs);
  timer.unref();
}

/** How long a suspect link's second opinion (askAnew) may take. */
const ASK_ANEW_MS = 1_500;

/**
 * Whether Redis answers a PING on a new link within `withinMs`: "silent" if it does (so the link in
 * question alone is silent), "unreachable" if no connection is made, "slow" if one is made and the
 * PING waits (Redis itself stalled).
 */
async function askAnew(url: string, withinMs: number): Promise<"silent" | "unreachable" | "slow"> {
  const probe = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: withinMs, reconnectStrategy: false },
  });
  probe.on("error", () => undefined);
  let timer: NodeJS.Timeout | undefined;
  try {
    const [answered, reachable] = await Promise.all([
      Promise.race([
        probe
          .connect()
          .then(() => probe.ping())
          .then(
            () => true,
            // An error reply (a refused password, too many clients) is an answer all the same.
            (err: unknown) => err instanceof ErrorReply,
          ),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), withinMs);
          timer.unref();
        }),
      ]),
      // Reachable at all: a TCP connection, made by the kernel even when Redis (or its TLS) stalls.
      tcpConnects(url, withinMs),
    ]);
    if (answered) return "silent";
    return reachable ? "slow" : "unreachable";
  } finally {
    clearTimeout(timer);
    probe.destroy();
  }
}

/** Whether a TCP connection to the URL's host and port is made within `withinMs`. */
function tcpConnects(url: string, withinMs: number): Promise<boolean> {
  const target = URL.parse(url);
  if (!target) return Promise.resolve(false);
  const port = Number(target.port || 6379);
  const host = target.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1";
  return new Promise((resolve) => {
    const socket = netConnect({ host, port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), withinMs);
    timer.unref();
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}
