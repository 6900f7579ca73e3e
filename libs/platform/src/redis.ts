// The one Redis connector of every service: the same client options, reconnect strategy, logging
// and start-up decision everywhere, on a single Redis or a Redis Cluster. Settings: REDIS_URL (or
// REDIS_URL_FILE), REDIS_CLUSTER_NODES (a Redis Cluster instead: its nodes, `host:port,…`),
// REDIS_PREFIX (the deployment's key namespace; each service adds its own fixed part) and
// REDIS_STANDIN. The stores take either client (`Redis`) and care not which: each script's keys
// share one hash slot (`slotTag`; docs/architecture.md "Redis keys"), which a single Redis ignores.
// The client alone: the `redis` package also loads and attaches to every client the Bloom, JSON,
// Search and TimeSeries modules (~170 more modules loaded), which no service uses.
import {
  ClientClosedError,
  ClientOfflineError,
  createClient,
  createCluster,
  ErrorReply,
} from "@redis/client";
import { ConfigError } from "./env.ts";
import { envTable, REDIS_ENV } from "./env-table.ts";
import type { Logger } from "./logger.ts";
import { redactUrl } from "./redact.ts";
import { watchReplies } from "./redis-link-watch.ts";
import type { ReplyWatchOptions } from "./reply-watch.ts";

function clientOptions(connectTimeoutMs: number, idleMs: number, giveUpBeforeFirst: () => boolean) {
  return {
    // Commands fail at once while the connection is down instead of queueing: the hot paths decide
    // (fail open, refuse a payment) rather than wait on a reconnect.
    disableOfflineQueue: true,
    // No pingInterval: node-redis's ping has no deadline (nor has any sent command), so on a link
    // gone silent it waits with everything else; watchReplies (below) probes with one.
    socket: {
      connectTimeout: connectTimeoutMs,
      // A link with nothing read or written for `idleMs` (30 s by default) is dropped and connected
      // anew: one that went silent during its handshake, before watchReplies watches it. Ready, a
      // link writes a PING every 0.5 s, so this fires only on one whose Redis stalls that long.
      socketTimeout: idleMs,
      // Before the first connection, a caller that has a fallback gives up at once; otherwise back
      // off and keep trying, capped at 2 s.
      reconnectStrategy: (retries: number, cause: Error) =>
        giveUpBeforeFirst() ? cause : Math.min(50 * 2 ** retries, 2_000),
    },
  };
}

function newClient(url: string, connectTimeoutMs: number, idleMs: number, giveUpBeforeFirst: () => boolean) {
  return createClient({ url, ...clientOptions(connectTimeoutMs, idleMs, giveUpBeforeFirst) });
}

/**
 * A Redis Cluster client: its nodes (`host:port`) to discover the slots from, each node's link set
 * up as a single client's (no offline queue, the same reconnects), and the credentials and TLS of
 * `url` (REDIS_URL: `rediss://user:password@…`) on every node. Commands go to the master of their
 * keys' slot; a script is routed by its first key.
 */
function newCluster(
  nodes: readonly string[],
  url: string,
  connectTimeoutMs: number,
  idleMs: number,
  giveUpBeforeFirst: () => boolean,
) {
  const auth = URL.parse(url);
  const scheme = auth?.protocol === "rediss:" ? "rediss" : "redis";
  const options = clientOptions(connectTimeoutMs, idleMs, giveUpBeforeFirst);
  return createCluster({
    rootNodes: nodes.map((node) => ({ url: `${scheme}://${node}` })),
    defaults: {
      ...options,
      ...(auth?.username ? { username: decodeURIComponent(auth.username) } : {}),
      ...(auth?.password ? { password: decodeURIComponent(auth.password) } : {}),
    },
    // A master lost: its slots are asked for again (at most every 2 s) until a replica took them.
    topologyRefreshOnReconnectionAttemptStrategy: 2_000,
  });
}

/** A single Redis client. */
export type RedisSingle = ReturnType<typeof newClient>;
/** A Redis Cluster client. */
export type RedisCluster = ReturnType<typeof newCluster>;
/** Either: what every store takes (REDIS_URL, or REDIS_CLUSTER_NODES). */
export type Redis = RedisSingle | RedisCluster;

/**
 * A hash tag: the keys of one entity (an account, a payer, a channel, a payment) that a script uses
 * together carry the same `{…}`, so they share one slot of a Redis Cluster (a single Redis ignores
 * it). `}` and `{` in `id` would end the tag early: never in the ids tagged (hex, uuids, addresses),
 * replaced all the same.
 */
export function slotTag(kind: string, id: string): string {
  return `{${kind}:${id.replace(/[{}]/g, "_")}}`;
}

/**
 * The hash tags of `client`'s keys: slotTag on a Redis Cluster; none on a single Redis, whose key
 * names stay what they were before clusters were supported (a running deployment's keys are found
 * again after an upgrade).
 */
export function slotTags(client: Redis): (kind: string, id: string) => string {
  return isCluster(client) ? slotTag : noSlotTag;
}

/** slotTags on a single Redis: no tag (a hot path may skip what it would tag: `tag === noSlotTag`). */
export const noSlotTag = (_kind: string, _id: string) => "";

/** Whether `client` is a Redis Cluster's. */
export function isCluster(client: Redis): client is RedisCluster {
  return "masters" in client;
}

/**
 * One command run on every master of a cluster (SCRIPT LOAD, a SCAN of its keys), or on the single
 * Redis: what a command without keys must do on a cluster.
 */
export async function onEveryMaster<T>(client: Redis, run: (node: RedisSingle) => Promise<T>): Promise<T[]> {
  if (!isCluster(client)) return [await run(client)];
  const out: T[] = [];
  for (const master of client.masters) {
    const node = await client.nodeClient(master);
    out.push(await run(node as unknown as RedisSingle));
  }
  return out;
}

/**
 * Whether a failed command may have run all the same: false when it was never sent (the client was
 * offline or closed: `disableOfflineQueue` fails it at once); true otherwise (the link dropped, a
 * timeout, an error reply), when Redis may have run it and only its answer was lost. A clean-up of
 * what such a command may have done is owed only then: during an outage, commands are not sent.
 */
export function mayHaveRun(err: unknown): boolean {
  return !(err instanceof ClientOfflineError || err instanceof ClientClosedError);
}

/**
 * Whether a command's answer was lost on its way (it may have run, and Redis did not answer it): not
 * while offline (never sent), nor an error reply (Redis answered).
 */
export function answerLost(err: unknown): boolean {
  return mayHaveRun(err) && !(err instanceof ErrorReply);
}

/**
 * What `read` finds once Redis answers again, tried every `everyMs` for at most `withinMs`;
 * undefined when Redis did not answer in time, or answered with an error. For a write whose answer
 * was lost (`answerLost`): the writer reads back whether it landed instead of guessing.
 */
export async function readBack<T>(
  read: () => Promise<T>,
  withinMs: number,
  everyMs = 100,
): Promise<{ value: T } | undefined> {
  const until = Date.now() + withinMs;
  for (;;) {
    try {
      return { value: await read() };
    } catch (err) {
      if (err instanceof ErrorReply || Date.now() + everyMs > until) return undefined;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}

/**
 * `run`, and should its answer be lost (`answerLost`), once more as soon as Redis answers (within
 * `withinMs`): for a command whose second run answers what the first did (an idempotent write, or
 * a script that recognises its own earlier run).
 */
export async function runAgainIfLost<T>(run: () => Promise<T>, withinMs: number): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!answerLost(err)) throw err;
    const again = await readBack(run, withinMs);
    if (!again) throw err;
    return again.value;
  }
}

/** What `settled` resolves, or false should it take longer than `ms`. */
async function trueWithin(settled: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const answer = await Promise.race([
    settled,
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return answer;
}

/**
 * Closes a client at shutdown: its pending commands may finish, for at most `withinMs` (on a link
 * gone silent they would wait for minutes, and the watch no longer runs on a closing client), then
 * it is dropped.
 */
export async function closeRedis(client: Redis, withinMs = 2_000): Promise<void> {
  if (!client.isOpen) return;
  const closed = await trueWithin(
    client.close().then(
      () => true,
      () => false,
    ),
    withinMs,
  );
  if (!closed) client.destroy();
}

/** The shared Redis settings, spelled the same in every service. */
export interface RedisSettings {
  url: string;
  /** REDIS_CLUSTER_NODES: a Redis Cluster's nodes (`host:port`) to start from; empty: REDIS_URL's single Redis. */
  clusterNodes: string[];
  /** The deployment's key namespace (`tollgate:`); a service's keys live under `<prefix><service part>`. */
  prefix: string;
  /**
   * Redis unreachable at start-up: use the in-memory single-node stand-in (one process only: replicas
   * with private state would each grant the whole plan and miss each other's replays). Off by default.
   */
  standIn: boolean;
}

export function readRedisSettings(): RedisSettings {
  const env = envTable(REDIS_ENV);
  return {
    url: env.secret("REDIS_URL") ?? "",
    clusterNodes: clusterNodesOf(env.string("REDIS_CLUSTER_NODES")),
    prefix: env.string("REDIS_PREFIX"),
    standIn: env.bool("REDIS_STANDIN"),
  };
}

/** REDIS_CLUSTER_NODES parsed: `host:port` entries, comma-separated. */
export function clusterNodesOf(value: string): string[] {
  const nodes = value
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
  for (const n of nodes)
    if (!/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$/.test(n))
      throw new ConfigError(`REDIS_CLUSTER_NODES: "${n}" is not host:port`);
  return nodes;
}

export interface ConnectRedisOptions {
  url: string;
  /** A Redis Cluster's nodes (RedisSettings.clusterNodes): connect to it instead of `url`'s Redis. */
  clusterNodes?: readonly string[];
  logger: Logger;
  /** How long start-up waits for the first connection. */
  connectTimeoutMs?: number;
  /**
   * Not reachable within connectTimeoutMs: "give-up" resolves undefined (the caller uses a stand-in
   * or tries later), "background" resolves the client, which keeps connecting (the caller fails
   * open meanwhile), "wait" keeps trying until Redis answers.
   */
  unreachable: "give-up" | "background" | "wait";
  /** Runs on every (re)connection (on a cluster: once connected), e.g. to load scripts. */
  onReady?: (client: Redis) => void;
  /** A link with nothing read or written this long is dropped (a handshake gone silent). Default 30 s. */
  idleMs?: number;
  /** The silent-link watch (watchReplies); default a probe every 0.5 s, suspect after 3 s unanswered. */
  replyWatch?: ReplyWatchOptions;
}

/**
 * SCAN of every master (a cluster's keys are spread over them) or of the single Redis: batches of
 * keys matching `options.MATCH`, as the single client's scanIterator yields them.
 */
export async function* scanEveryMaster(
  client: Redis,
  options: { MATCH?: string; COUNT?: number },
): AsyncGenerator<string[]> {
  if (!isCluster(client)) {
    yield* client.scanIterator(options);
    return;
  }
  for (const master of client.masters) {
    const node = (await client.nodeClient(master)) as unknown as RedisSingle;
    yield* node.scanIterator(options);
  }
}

/** How a service's log says it gave up a silent Redis link (the chaos run counts these lines). */
export const REDIS_LINK_SILENT = "Redis link silent";

/** Connects to Redis (see ConnectRedisOptions.unreachable for what happens when it cannot). */
export async function connectRedis(opts: ConnectRedisOptions): Promise<Redis | undefined> {
  if (opts.clusterNodes?.length) return connectCluster(opts, opts.clusterNodes);
  const timeoutMs = opts.connectTimeoutMs ?? 2_000;
  const where = redactUrl(opts.url);
  let connectedOnce = false;
  let lastErrorLog = 0;
  let down = false;
  const giveUp = () => !connectedOnce && opts.unreachable === "give-up";
  const client = newClient(
    opts.url,
    Math.max(200, Math.min(timeoutMs, 2_000)),
    opts.idleMs ?? 30_000,
    giveUp,
  );
  client.on("error", (err: Error) => {
    // A failed reconnect attempt errors every couple of seconds while Redis is away: one line a minute.
    down = true;
    if (!connectedOnce || Date.now() - lastErrorLog < 60_000) return;
    lastErrorLog = Date.now();
    opts.logger.warn({ url: where, err: err.message }, "Redis connection error; reconnecting");
  });
  client.on("ready", () => {
    if (connectedOnce && down) opts.logger.info({ url: where }, "Redis connection restored");
    connectedOnce = true;
    down = false;
    opts.onReady?.(client);
  });
  const connecting = client.connect().then(
    () => true,
    () => false,
  );
  const connected = await trueWithin(connecting, timeoutMs);
  const watched = (): Redis => {
    let slowSaid = 0;
    const watch = opts.replyWatch ?? { everyMs: 500, silentMs: 3_000 };
    const unanswered = `a PING unanswered ${watch.silentMs / 1000} s`;
    watchReplies(client, opts.url, watch, (verdict) => {
      if (verdict === "slow") {
        // Said once a minute while it lasts.
        if (Date.now() - slowSaid < 60_000) return;
        slowSaid = Date.now();
        opts.logger.warn({ url: where }, `Redis slow (${unanswered} on every link): waiting for it`);
        return;
      }
      down = true;
      opts.logger.warn(
        // The pid tells replicas apart where their logs meet (the chaos run counts them).
        { url: where, pid: process.pid },
        verdict === "silent"
          ? `${REDIS_LINK_SILENT} (${unanswered}, a new link answers): reconnecting`
          : `Redis unreachable (${unanswered}, no new link): reconnecting`,
      );
    });
    return client;
  };
  if (connected) return watched();
  if (opts.unreachable === "give-up") {
    client.destroy();
    return undefined;
  }
  if (opts.unreachable === "background") {
    opts.logger.warn({ url: where }, "Redis is unreachable; connecting in the background");
    return watched();
  }
  // Not serving (no listener yet, so probes fail) beats serving without the shared state.
  opts.logger.warn({ url: where }, "Redis is unreachable: waiting for it (REDIS_STANDIN=false)");
  await connecting;
  while (!client.isReady) {
    await new Promise((r) => setTimeout(r, 250));
    // The client reconnects by itself; should it have given up, start it again.
    if (!client.isOpen) await client.connect().catch(() => undefined);
  }
  opts.logger.info({ url: where }, "Redis reachable");
  return watched();
}

/**
 * connectRedis on a Redis Cluster: the same start-up decision (give up, connect in the background,
 * wait). node-redis keeps one link per node and follows the slots as they move (MOVED, a failover:
 * topology asked again while a node reconnects). The silent-link watch (watchReplies) is the single
 * client's; on a cluster a link gone silent is noticed by its socket's idle timeout (`idleMs`).
 */
async function connectCluster(
  opts: ConnectRedisOptions,
  nodes: readonly string[],
): Promise<Redis | undefined> {
  const timeoutMs = opts.connectTimeoutMs ?? 2_000;
  const where = nodes.join(",");
  let connectedOnce = false;
  let lastErrorLog = 0;
  const giveUp = () => !connectedOnce && opts.unreachable === "give-up";
  const cluster = newCluster(
    nodes,
    opts.url,
    Math.max(200, Math.min(timeoutMs, 2_000)),
    opts.idleMs ?? 30_000,
    giveUp,
  );
  // A master lost: node-redis asks for the slots again only while a link that was once ready
  // reconnects. A link made afresh to the dead master (from a topology read mid-failover, which still
  // named it) never was ready, so nothing asked again and its slots answered "The client is offline"
  // for good (a quota-meter failed open for minutes in the cluster chaos run). Any node link in
  // trouble asks for the slots again, at most once a second, until the failover shows in them.
  let lastRediscover = 0;
  const rediscover = () => {
    const now = Date.now();
    if (!connectedOnce || now - lastRediscover < 1_000) return;
    lastRediscover = now;
    cluster._slots.rediscover().catch(() => undefined);
  };
  cluster.on("node-reconnecting", rediscover);
  cluster.on("node-error", rediscover);
  cluster.on("error", (err: Error) => {
    if (!connectedOnce || Date.now() - lastErrorLog < 60_000) return;
    lastErrorLog = Date.now();
    opts.logger.warn({ nodes: where, err: err.message }, "Redis Cluster error; reconnecting");
  });
  const attempt = (): Promise<boolean> =>
    cluster.connect().then(
      () => {
        connectedOnce = true;
        opts.onReady?.(cluster);
        return true;
      },
      () => false,
    );
  let connecting = attempt();
  const connected = await trueWithin(connecting, timeoutMs);
  if (connected) return cluster;
  if (opts.unreachable === "give-up") {
    void connecting.then((late) => late && cluster.destroy());
    if (cluster.isOpen) cluster.destroy();
    return undefined;
  }
  const keepTrying = async () => {
    while (!(await connecting)) {
      await new Promise((r) => setTimeout(r, 1_000));
      connecting = attempt();
    }
  };
  if (opts.unreachable === "background") {
    opts.logger.warn({ nodes: where }, "Redis Cluster is unreachable; connecting in the background");
    void keepTrying();
    return cluster;
  }
  opts.logger.warn({ nodes: where }, "Redis Cluster is unreachable: waiting for it (REDIS_STANDIN=false)");
  await keepTrying();
  opts.logger.info({ nodes: where }, "Redis Cluster reachable");
  return cluster;
}
