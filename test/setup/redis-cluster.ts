// The contract suites' Redis Cluster: six redis-server processes on loopback (three masters, three
// replicas; libs/platform/src/ports.ts TEST_REDIS_CLUSTER_PORTS), each in a temp dir of its own,
// started once per vitest run of the components project (globalSetup) and torn down after. It starts
// in the background (about 4 s, while the workers load): the suites reach it by
// `inject("redisClusterNodes")` once `clusterReady` says every node is ok (test/support/redis-cluster.ts).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { TEST_REDIS_CLUSTER_PORTS } from "@tollgate/platform";
import { createClient } from "redis";
import type { TestProject } from "vitest/node";
import { eventually } from "../support/eventually.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** The fixture cluster's nodes, `127.0.0.1:port` (REDIS_CLUSTER_NODES). */
    redisClusterNodes: string[];
  }
}

const run = promisify(execFile);

export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** The first block whose node and bus ports are all free. */
export async function freeBlock(): Promise<number[]> {
  const { base, nodes, blockSize, blocks } = TEST_REDIS_CLUSTER_PORTS;
  for (let b = 0; b < blocks; b++) {
    const ports = Array.from({ length: nodes }, (_, i) => base + b * blockSize + i);
    const free = await Promise.all(ports.flatMap((p) => [portFree(p), portFree(p + 10_000)]));
    if (free.every(Boolean)) return ports;
  }
  throw new Error(`no free block of Redis Cluster test ports from ${base}`);
}

/** A cluster node's redis-server arguments on loopback (node timeout 2 s; `aof`: an append-only file). */
export function clusterNodeArgs(port: number, dir: string, aof: boolean): string[] {
  return [
    ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
    ...["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"],
    ...["--save", "", "--appendonly", aof ? "yes" : "no"],
  ];
}

/** `read` until it holds, every 50 ms, for at most `ms`; the last error otherwise. */
async function until(what: string, read: () => Promise<boolean>, ms = 20_000): Promise<void> {
  let last: unknown;
  const held = await eventually(
    () =>
      read().catch((err: unknown) => {
        last = err;
        return false;
      }),
    true,
    ms,
    50,
  );
  if (!held) throw new Error(`Redis Cluster fixture: ${what} (last: ${String(last)})`);
}

async function answers(port: number, command: string[], ok: (reply: string) => boolean): Promise<boolean> {
  const client = createClient({ socket: { host: "127.0.0.1", port, reconnectStrategy: false } });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return ok(String(await client.sendCommand(command)));
  } finally {
    client.destroy();
  }
}

interface TestCluster {
  nodes: string[];
  stop(): Promise<void>;
}

/** Whether every node of `nodes` says cluster_state:ok with all 16384 slots served, within `ms`. */
export function clusterReady(nodes: readonly string[], ms = 20_000): Promise<void> {
  return Promise.all(
    nodes.map((node) => {
      const port = Number(node.slice(node.lastIndexOf(":") + 1));
      return until(
        `node ${port} says cluster_state:ok`,
        () =>
          answers(
            port,
            ["CLUSTER", "INFO"],
            (r) => r.includes("cluster_state:ok") && r.includes("cluster_slots_ok:16384"),
          ),
        ms,
      );
    }),
  ).then(() => undefined);
}

/** A cluster of its own, on the first free block of ports (a suite that starts its own mesh on it). */
export async function startTestCluster(): Promise<TestCluster> {
  return startOn(await freeBlock());
}

/** Starts the six nodes on `ports`, joins them into a cluster and waits until every node says it is ok. */
async function startOn(ports: number[]): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-redis-cluster-"));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            child.kill("SIGKILL");
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      const nodeDir = mkdtempSync(join(dir, `${port}-`));
      const child = spawn("redis-server", clusterNodeArgs(port, nodeDir, false), { stdio: "ignore" });
      children.push(child);
    }
    for (const port of ports)
      await until(`node ${port} answers`, () => answers(port, ["PING"], (r) => r === "PONG"));
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    await run("redis-cli", ["--cluster", "create", ...nodes, "--cluster-replicas", "1", "--cluster-yes"]);
    await clusterReady(nodes);
    return { nodes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * globalSetup of the components project: one cluster for the run, started in the background (a run
 * of files that do not use it waits for nothing), stopped after.
 */
export default async function setup(project: TestProject) {
  const ports = await freeBlock();
  const starting = startOn(ports).then(
    (cluster) => ({ cluster }),
    (err: unknown) => ({ err }),
  );
  project.provide(
    "redisClusterNodes",
    ports.map((p) => `127.0.0.1:${p}`),
  );
  return async () => {
    const started = await starting;
    if ("cluster" in started) await started.cluster.stop();
  };
}
