// The cluster chaos run's servers (`pnpm chaos --cluster`, issue 43): a Redis Cluster of three masters
// and three replicas and a 3-node NATS JetStream cluster, each node a process of the run's own on
// loopback, which the faults kill with SIGKILL and start again on its port and data directory. The
// helpers read the clusters' own views (CLUSTER NODES, INFO replication, /jsz): which master holds a
// slot, whether every replica is in step, whether a failover is done, which node leads the streams.
import { execFile } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { TEST_NATS_CLUSTER_PORTS } from "@tollgate/platform";
import { createClient } from "redis";
import { clusterNodeArgs, clusterReady, freeBlock, portFree } from "../setup/redis-cluster.ts";
import { eventually } from "../support/eventually.ts";
import { now } from "./load.ts";
import { OwnServer } from "./servers.ts";

const run = promisify(execFile);

/** One redis-cli command against a node; its reply as text ("" when the node does not answer). */
async function redisCli(port: number, ...args: string[]): Promise<string> {
  try {
    const { stdout } = await run("redis-cli", ["-p", String(port), ...args], { timeout: 5_000 });
    return stdout;
  } catch {
    return "";
  }
}

/** `read` until it holds, every 100 ms, for at most `ms`; fails naming what it last saw. */
async function until(what: string, read: () => Promise<string | true>, ms = 60_000): Promise<void> {
  const seen = await eventually(read, (v) => v === true, ms, 100);
  if (seen !== true) throw new Error(`${what}: not within ${ms / 1000} s (last seen: ${seen})`);
}

interface NodeLine {
  id: string;
  port: number;
  master: boolean;
  failed: boolean;
  masterId: string;
  slots: [number, number][];
}

function parseNodes(text: string): NodeLine[] {
  return text
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [id = "", addr = "", flags = "", masterId = "", , , , , ...slots] = line.split(" ");
      return {
        id,
        port: Number(addr.split("@")[0]?.split(":")[1]),
        master: flags.includes("master"),
        failed: flags.includes("fail") && !flags.includes("fail?"),
        masterId,
        slots: slots
          .filter((s) => !s.startsWith("["))
          .map((s) => {
            const [a, b] = s.split("-").map(Number);
            return [a ?? 0, b ?? a ?? 0] as [number, number];
          }),
      };
    });
}

/** A Redis Cluster of the run's own: six redis-server processes, AOF on (a restarted node keeps its data). */
export class OwnRedisCluster {
  readonly nodes: OwnServer[];

  private constructor(nodes: OwnServer[]) {
    this.nodes = nodes;
  }

  static async start(dir: string): Promise<OwnRedisCluster> {
    const ports = await freeBlock();
    const nodes = ports.map((port) => {
      const nodeDir = join(dir, String(port));
      mkdirSync(nodeDir, { recursive: true });
      const args = clusterNodeArgs(port, nodeDir, true);
      return new OwnServer(
        port,
        "redis-server",
        args,
        async () => (await redisCli(port, "PING")).trim() === "PONG",
      );
    });
    const cluster = new OwnRedisCluster(nodes);
    try {
      await Promise.all(nodes.map((n) => n.start()));
      await run("redis-cli", [
        "--cluster",
        "create",
        ...cluster.addresses,
        "--cluster-replicas",
        "1",
        "--cluster-yes",
      ]);
      await clusterReady(cluster.addresses, 60_000);
      await cluster.inStep();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** REDIS_CLUSTER_NODES. */
  get addresses(): string[] {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`);
  }

  node(port: number): OwnServer {
    const found = this.nodes.find((n) => n.port === port);
    if (!found) throw new Error(`no node on ${port}`);
    return found;
  }

  /** CLUSTER NODES as a live node sees it. */
  async view(): Promise<NodeLine[]> {
    for (const n of this.nodes) {
      if (!n.pid) continue;
      const text = await redisCli(n.port, "CLUSTER", "NODES");
      if (text) return parseNodes(text);
    }
    return [];
  }

  /** The port of the master serving `key`'s slot (its hash tag's). */
  async masterOf(key: string): Promise<number> {
    const slot = Number((await redisCli(this.nodes[0]?.port ?? 0, "CLUSTER", "KEYSLOT", key)).trim());
    let port = 0;
    await until(`a master serving slot ${slot}`, async () => {
      const holder = (await this.view()).find(
        (n) => n.master && !n.failed && n.slots.some(([a, b]) => slot >= a && slot <= b),
      );
      port = holder?.port ?? 0;
      return port ? true : "none";
    });
    return port;
  }

  /**
   * Every replica in step with its master: its link up, no sync in progress, and its master listing
   * it online with no lag; three masters each with a replica. A condition, never a fixed wait: a master
   * killed before its replica synced is never replaced.
   */
  async inStep(ms = 60_000): Promise<void> {
    await until(
      "every Redis replica in step",
      async () => {
        const view = (await this.view()).filter((n) => !n.failed);
        const masters = view.filter((n) => n.master && n.slots.length > 0);
        const replicas = view.filter((n) => !n.master);
        if (masters.length !== 3 || replicas.length !== 3)
          return `masters ${masters.length}, replicas ${replicas.length}`;
        for (const r of replicas) {
          const info = await redisCli(r.port, "INFO", "replication");
          if (!info.includes("master_link_status:up") || !info.includes("master_sync_in_progress:0"))
            return `replica ${r.port}: ${info.replace(/\r?\n/g, " ")}`;
        }
        for (const m of masters) {
          const info = await redisCli(m.port, "INFO", "replication");
          const lines = info.split(/\r?\n/).filter((l) => /^slave\d+:/.test(l));
          if (lines.length === 0 || !lines.every((l) => l.includes("state=online") && /lag=[01]\b/.test(l)))
            return `master ${m.port}: ${lines.join(" ")}`;
        }
        return true;
      },
      ms,
    );
  }

  /**
   * Kills the master on `port` (SIGKILL) and waits until the cluster has failed over: the dead node
   * flagged `fail`, another master serving its slots, every live node saying cluster_state:ok.
   * Returns the promoted master's port.
   */
  async killMaster(port: number): Promise<number> {
    const before = (await this.view()).find((n) => n.port === port);
    if (!before?.master) throw new Error(`${port} is not a master`);
    const [first] = before.slots[0] ?? [0];
    await this.node(port).stop("SIGKILL");
    let promoted = 0;
    await until(
      `failover of ${port}`,
      async () => {
        const view = await this.view();
        const dead = view.find((n) => n.port === port);
        const holder = view.find(
          (n) => n.master && !n.failed && n.slots.some(([a, b]) => first >= a && first <= b),
        );
        if (!dead?.failed || !holder || holder.port === port) return `dead ${JSON.stringify(dead)}`;
        for (const n of this.nodes) {
          if (n.port === port) continue;
          if (!(await redisCli(n.port, "CLUSTER", "INFO")).includes("cluster_state:ok"))
            return `${n.port} not ok`;
        }
        promoted = holder.port;
        return true;
      },
      60_000,
    );
    return promoted;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop("SIGKILL")));
  }
}

/**
 * WAIT's cost per write on this cluster's master of `key`: `n` one-key scripts (an INCR, as the
 * stores' scripts write) one after another, alone and each followed by `WAIT 1 1000` (answers once
 * one replica acknowledged the write), median ms per call of each.
 */
export async function waitCost(cluster: OwnRedisCluster, key: string, n = 300) {
  const client = createClient({ socket: { host: "127.0.0.1", port: await cluster.masterOf(key) } });
  await client.connect();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  try {
    // Interleaved, so a busy moment of the machine falls on both.
    const alone: number[] = [];
    const waited: number[] = [];
    for (let i = 0; i < n; i++) {
      for (const withWait of [false, true]) {
        const t0 = now();
        await client.eval("return redis.call('INCR', KEYS[1])", { keys: [key] });
        if (withWait) await client.sendCommand(["WAIT", "1", "1000"]);
        (withWait ? waited : alone).push(now() - t0);
      }
    }
    const writeMs = median(alone);
    const writeAndWaitMs = median(waited);
    await client.del(key);
    return { writeMs: round3(writeMs), writeAndWaitMs: round3(writeAndWaitMs) };
  } finally {
    client.destroy();
  }
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

/** A NATS JetStream cluster of the run's own: three nodes routed to each other, each with its store. */
export class OwnNatsCluster {
  readonly nodes: OwnServer[];
  readonly monitors: number[];

  private constructor(nodes: OwnServer[], monitors: number[]) {
    this.nodes = nodes;
    this.monitors = monitors;
  }

  static async start(dir: string): Promise<OwnNatsCluster> {
    const { client, route, monitor, nodes: count, blockSize, blocks } = TEST_NATS_CLUSTER_PORTS;
    let base = -1;
    for (let b = 0; b < blocks && base < 0; b++) {
      const ports = Array.from({ length: count }, (_, i) =>
        [client, route, monitor].map((p) => p + b * blockSize + i),
      );
      if ((await Promise.all(ports.flat().map(portFree))).every(Boolean)) base = b * blockSize;
    }
    if (base < 0) throw new Error(`no free block of NATS cluster test ports from ${client}`);
    const routes = Array.from({ length: count }, (_, i) => `nats://127.0.0.1:${route + base + i}`).join(",");
    const monitors = Array.from({ length: count }, (_, i) => monitor + base + i);
    const nodes = Array.from({ length: count }, (_, i) => {
      const port = client + base + i;
      const args = [
        ...["-a", "127.0.0.1", "-p", String(port), "-m", String(monitors[i]), "-n", `n${i + 1}`],
        ...["-js", "-sd", join(dir, `n${i + 1}`), "--cluster_name", "tg"],
        ...["--cluster", `nats://127.0.0.1:${route + base + i}`, "--routes", routes],
      ];
      const ready = () =>
        fetch(`http://127.0.0.1:${monitors[i]}/healthz?js-enabled-only=true`).then(
          (r) => r.ok,
          () => false,
        );
      return new OwnServer(port, "nats-server", args, ready);
    });
    const cluster = new OwnNatsCluster(nodes, monitors);
    try {
      await Promise.all(nodes.map((n) => n.start()));
      await cluster.healthy();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** NATS_URL: every node. */
  get url(): string {
    return this.nodes.map((n) => `nats://127.0.0.1:${n.port}`).join(",");
  }

  /** Every live node healthy (JetStream up, a metadata leader, its streams current). */
  async healthy(ms = 60_000): Promise<void> {
    await until(
      "every NATS node healthy",
      async () => {
        for (const [i, n] of this.nodes.entries()) {
          if (!n.pid) continue;
          const res = await fetch(`http://127.0.0.1:${this.monitors[i]}/healthz`).catch(() => undefined);
          if (!res?.ok) return `n${i + 1}: ${res ? await res.text() : "no answer"}`;
        }
        return true;
      },
      ms,
    );
  }

  /** The node leading most of the streams (JetStream's own view), and the replicas of each stream. */
  async streamLeader(): Promise<{ index: number; streams: Record<string, number> }> {
    const counts = new Map<string, number>();
    const streams: Record<string, number> = {};
    for (const [i] of this.nodes.entries()) {
      const jsz = (await fetch(
        `http://127.0.0.1:${this.monitors[i]}/jsz?accounts=true&streams=true&config=true`,
      )
        .then((r) => r.json())
        .catch(() => ({}))) as {
        account_details?: {
          stream_detail?: {
            name: string;
            config?: { num_replicas?: number };
            cluster?: { leader?: string };
          }[];
        }[];
      };
      for (const s of jsz.account_details?.flatMap((a) => a.stream_detail ?? []) ?? []) {
        streams[s.name] = s.config?.num_replicas ?? 0;
        const leader = s.cluster?.leader;
        if (leader) counts.set(`${s.name}@${leader}`, 1);
      }
    }
    const byNode = new Map<string, number>();
    for (const k of counts.keys()) {
      const leader = k.split("@")[1] ?? "";
      byNode.set(leader, (byNode.get(leader) ?? 0) + 1);
    }
    const top = [...byNode].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "n1";
    return { index: Number(top.slice(1)) - 1, streams };
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop("SIGKILL")));
  }
}
