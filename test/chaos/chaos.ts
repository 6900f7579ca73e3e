// The chaos run (issue 16): a mesh from deploy/local on its own Redis, NATS and database, two
// upstream front doors of one node and two payment-verifier replicas, under a steady mixed load
// (API keys on several accounts; x402 exact and x402-batch paid with the official client), while
// faults are injected one after another with recovery between. After each fault it reconciles what
// the load generator saw against the windows (Redis), the usage rollups and the payment ledger
// (PostgreSQL) and the chain: nothing lost, nothing twice, nothing charged that was not served.
// This file sets the run up, runs its phases and the soak; the load is in load.ts, the faults in
// faults.ts, the books in reconcile.ts, the report in report.ts.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { DevnetFile } from "@tollgate/devnet";
import { type Mesh, meshAdmin, type RunningService, type ServiceName, startMesh } from "@tollgate/local";
import { REDIS_LINK_SILENT } from "@tollgate/platform";
import { buildBundles } from "../support/bundles.ts";
import { sleep } from "../support/eventually.ts";
import { mppChargePayer, mppSessionPayer, tempoChain, tip20Balance } from "../support/mppx.ts";
import { manifestNodeOptions, podCgroups } from "../support/pod-limits.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";
import { settlementClient, usdcBalance, x402Payer } from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";
import { OwnNatsCluster, OwnRedisCluster } from "./cluster.ts";
import { clusterBooks, creditsAccount, runClusterFaults } from "./cluster-faults.ts";
import { runFaults } from "./faults.ts";
import { type Account, now, sessionDeposit, startLoad, Tally } from "./load.ts";
import { reconcile } from "./reconcile.ts";
import { type ChaosReport, CLASSES, type PhaseReport, round, summaryLine } from "./report.ts";
import { type OwnServer, ownNats, ownRedis, Upstream } from "./servers.ts";
import {
  heapGrowth,
  probeLiveHeap,
  type SoakSample,
  type SoakTarget,
  sample,
  slopes,
  takeHeapSnapshots,
} from "./soak.ts";

export interface ChaosOptions {
  /** The CI form: short holds and observation windows. */
  short?: boolean;
  /** Steady load for this long (ms), no faults: RSS and fds of every service sampled. */
  soakMs?: number;
  /**
   * With soakMs: a directory where every service writes a heap snapshot at start, middle and end
   * (kept after the run, for DevTools); the report compares them by constructor (soak.ts).
   */
  heapSnapshots?: string;
  /**
   * With soakMs: every service in a memory cgroup at its k8s/base limit and with its manifest's
   * NODE_OPTIONS, from its bundle, as in its pod (test/support/pod-limits.ts; root and cgroup v1). One
   * payment-verifier replica: a group holds one pod's process.
   */
  limits?: boolean;
  /**
   * The cluster run (issue 43): Redis a Redis Cluster (3 masters, 3 replicas) and NATS a 3-node
   * JetStream cluster (streams R3), a credits-only account in the load, and the cluster faults
   * (cluster-faults.ts) instead of the single servers' ones.
   */
  cluster?: boolean;
  log?: (line: string) => void;
}

export async function runChaos(opts: ChaosOptions = {}): Promise<ChaosReport> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const short = opts.short ?? false;
  const mode: ChaosReport["mode"] = opts.soakMs ? "soak" : short ? "short" : "full";
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "tollgate-chaos-"));
  const cleanup: (() => Promise<void>)[] = [];
  const lines: string[] = [];
  /** Per service, the processes that gave up a silent Redis link (its connector's warning). */
  const silentGivenUp = new Map<string, Set<string>>();
  try {
    if (opts.cluster && opts.soakMs) throw new Error("--cluster runs the cluster faults, not a soak");
    const clusters = opts.cluster ? await startClusters(dir, cleanup) : undefined;
    // Own Redis and NATS, as processes of their own on free ports.
    const redis = await ownRedis(mkdir(dir, "redis"));
    cleanup.push(() => redis.stop());
    // The mesh reaches Redis through a TCP proxy of the run's (stand-in for a network path), so one
    // phase can cut the links while replies are on their way: Redis ran the commands, their callers
    // never heard back.
    const redisLink = await tcpProxy(redis.port);
    cleanup.push(() => redisLink.close());
    const nats = await ownNats(mkdir(dir, "nats"));
    cleanup.push(() => nats.stop());
    const database: TestDatabase = await createTestDatabase("chaos");
    cleanup.push(() => database.drop());
    const upstreams = [new Upstream(), new Upstream()];
    for (const u of upstreams) {
      await u.start();
      cleanup.push(() => u.stop());
    }
    log(
      `redis :${redis.port}, nats :${nats.port}, database ${database.name}, upstreams ${upstreams.map((u) => u.port)}`,
    );

    // A soak preloads the live-heap probe into every service, and with heapSnapshots has each write
    // a heap snapshot on SIGUSR2 where the soak reads them (soak.ts).
    const probeDir = opts.soakMs ? mkdir(dir, "probe") : undefined;
    const pods = opts.soakMs && opts.limits ? podCgroups("tollgate-soak") : undefined;
    if (pods) buildBundles();
    if (pods) cleanup.push(async () => pods.remove());
    const heapDir = opts.soakMs && opts.heapSnapshots ? mkdir(opts.heapSnapshots, "") : undefined;
    const nodeOptions = [
      ...(probeDir ? [`--import=${fileURLToPath(new URL("./heap-probe.ts", import.meta.url))}`] : []),
      ...(heapDir ? ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${heapDir}`] : []),
    ];

    // A free port found by binding port 0 can be taken by another process on this shared machine
    // before a service binds it: start again on fresh ports.
    const startOnFreePorts = async (options: Parameters<typeof startMesh>[0]) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await startMesh(options);
        } catch (err) {
          if (attempt >= 3 || !String(err).includes("EADDRINUSE")) throw err;
          log("a port was taken meanwhile; starting the mesh again");
        }
      }
    };
    /** A service's NODE_OPTIONS: the soak's probe flags, and in pod limits its manifest's own. */
    const nodeOptionsOf = (service: ServiceName) => ({
      NODE_OPTIONS: [...nodeOptions, ...(pods ? [manifestNodeOptions(service) ?? ""] : [])].join(" ").trim(),
    });
    const mesh = await startOnFreePorts({
      stateDir: mkdir(dir, "state"),
      paymentVerifierReplicas: pods ? 1 : 2,
      // In pod limits, as the pods run them: from their bundles.
      ...(pods ? { cgroups: pods.cgroups, bundles: true } : {}),
      upstreams: (network, rpcUrl) => {
        if (network !== "ethereum") return rpcUrl;
        for (const u of upstreams) u.target = rpcUrl;
        return upstreams.map((u) => u.url).join(",");
      },
      env: {
        LOG_LEVEL: "warn",
        REDIS_URL: redisLink.url("redis"),
        NATS_URL: `nats://127.0.0.1:${nats.port}`,
        DATABASE_URL: database.url,
        // The real Redis or nothing: an in-memory stand-in would hide the fail-open path.
        REDIS_STANDIN: "false",
        ...(probeDir ? { SOAK_PROBE_DIR: probeDir, NODE_OPTIONS: nodeOptions.join(" ") } : {}),
        ...(clusters
          ? {
              // A closed port: a service that did not take the cluster would wait for it, and the mesh not start.
              REDIS_URL: "redis://127.0.0.1:1",
              REDIS_CLUSTER_NODES: clusters.redis.addresses.join(","),
              NATS_URL: clusters.nats.url,
              NATS_STREAM_REPLICAS: "3",
            }
          : {}),
      },
      serviceEnv: {
        ...(pods
          ? {
              gateway: nodeOptionsOf("gateway"),
              "quota-meter": nodeOptionsOf("quota-meter"),
              dashboard: nodeOptionsOf("dashboard"),
            }
          : {}),
        // A hung node is given up on quickly, so its calls fail over rather than time out.
        "rpc-proxy": {
          ...(pods ? nodeOptionsOf("rpc-proxy") : {}),
          UPSTREAM_TIMEOUT_MS: "1000",
          UPSTREAM_BREAKER_COOLDOWN_MS: "2000",
          UPSTREAM_HEAD_POLL_MS: "500",
        },
        // The session channel is settled on chain during the run (every 20 calls' worth).
        "settlement-worker": {
          ...(pods ? nodeOptionsOf("settlement-worker") : {}),
          MPP_SESSION_SETTLE_MIN_AMOUNT: "0.02",
          MPP_SESSION_SETTLE_TICK_SECONDS: "2",
        },
        "payment-verifier": {
          ...(pods ? nodeOptionsOf("payment-verifier") : {}),
          PAYMENT_ATTEMPTS_PER_CLIENT_PER_SECOND: "1000",
          PAYMENT_ATTEMPTS_PER_CLIENT_BURST: "1000",
        },
      },
      onLine: (service, line) => {
        if (line.includes(REDIS_LINK_SILENT)) {
          // By process: replicas log under one service name.
          const pids = silentGivenUp.get(service) ?? new Set<string>();
          pids.add(/"pid":(\d+)/.exec(line)?.[1] ?? "?");
          silentGivenUp.set(service, pids);
        }
        lines.push(`[${service}] ${line}`);
        if (lines.length > 400) lines.shift();
        if (process.env.CHAOS_LOGS) process.stderr.write(`[${service}] ${line}\n`);
      },
      log,
    });
    cleanup.unshift(() => mesh.stop());
    if (!mesh.devnet) throw new Error("the chaos mesh runs on its own devnet");
    const devnet = mesh.devnet as unknown as DevnetFile;
    log(`mesh up: gateway ${mesh.gatewayUrl}`);

    const admin = meshAdmin(mesh);
    const accounts: Account[] = [];
    for (let i = 0; i < 3; i++) {
      const { account, secret } = await admin.quickstart(`chaos-${i}`, { burst: 100_000 });
      accounts.push({ id: account.id, key: secret });
    }
    admin.close();

    const tally = new Tally();
    const x402Payers = ["payer1", "payer2"].map((role) => x402Payer(devnet, role));
    const batch = batchPayer(devnet, "payer3");
    const chain = settlementClient(devnet);
    const paidBefore = new Map<string, bigint>();
    for (const p of x402Payers) paidBefore.set(p.address, await usdcBalance(chain, devnet, p.address));
    // MPP with the official mppx client: `charge` in pathUSD (one transfer per call) and a
    // `session` in USDC.e (one channel, a voucher per call); the payee's balance of each token
    // moves only for that payer, so it is what each one was charged, or settled.
    const tempo = {
      ...devnet.demo.tempo,
      rpc: tempoChain(devnet).anvilRpcUrl,
    };
    const mpp = {
      charge: mppChargePayer(devnet, "payer4", tempo.pathUsd.address),
      // The deposit covers the whole run (a payer makes at most ~5 calls a second): an emptied channel
      // is refused by the client itself, which a long soak would show as a fault that is not one.
      session: mppSessionPayer(devnet, "payer5", sessionDeposit(opts.soakMs)),
      balances: async () => ({
        pathUsd: await tip20Balance(tempo.rpc, tempo.pathUsd.address, tempo.payTo),
        usdce: await tip20Balance(tempo.rpc, tempo.usdce.address, tempo.payTo),
      }),
    };
    const payeeBefore = await mpp.balances();
    // The cluster run: a credits-only account in the load, and the chains' receipts for its books.
    const clusterLoad = clusters ? await creditsAccount(mesh, devnet, [chain, tempo.rpc]) : undefined;
    const credits = clusterLoad?.credits;
    const receipt = clusterLoad?.receipt ?? (async () => undefined);

    const load = startLoad(mesh, accounts, x402Payers, batch, mpp, tally, credits);
    cleanup.unshift(() => load.stop());
    const phases: PhaseReport[] = [];
    const hold = (fullS: number, shortS: number) => (short ? shortS : fullS) * 1000;
    const observe = hold(15, 6);

    /** One fault: inject, hold, lift, watch recovery, then reconcile. */
    const phase = async (
      fault: string,
      inject: () => Promise<void>,
      lift: () => Promise<void>,
      heldMs: number,
    ) => {
      tally.newPhase();
      notes = [];
      log(`fault: ${fault}`);
      const t0 = now();
      await inject();
      // time-based: the fault is held for its duration (the chaos run's subject).
      await sleep(heldMs);
      await lift();
      const liftedAt = now();
      // time-based: a window to observe the mesh after the fault is lifted.
      await sleep(observe);
      // A quiet mesh for the books: no call in flight while each side is read.
      await load.pause();
      const stats = tally.newPhase();
      const check = await reconcile(
        mesh,
        database,
        accounts,
        x402Payers,
        tally,
        chain,
        devnet,
        paidBefore,
        async () => {
          const b = await mpp.balances();
          return { charged: b.pathUsd - payeeBefore.pathUsd, settled: b.usdce - payeeBefore.usdce };
        },
        log,
      );
      const books = credits ? await clusterBooks(mesh, database, credits, tally, check, receipt) : undefined;
      load.resume();
      const report: PhaseReport = {
        fault,
        heldS: round((liftedAt - t0) / 1000),
        answered: Object.fromEntries(CLASSES.map((c) => [c, stats[c].statuses])) as PhaseReport["answered"],
        served: Object.fromEntries(CLASSES.map((c) => [c, stats[c].served])) as PhaseReport["served"],
        failOpen: stats.key.failOpen,
        recoverS: Object.fromEntries(
          CLASSES.map((c) => [c, round(Math.max(0, stats[c].lastFailureAt - liftedAt) / 1000)]),
        ) as PhaseReport["recoverS"],
        bad5xx: CLASSES.reduce((n, c) => n + stats[c].bad5xx, 0),
        notes,
        reasons: Object.fromEntries(CLASSES.map((c) => [c, stats[c].reasons])) as PhaseReport["reasons"],
        check,
        ...(books ? { cluster: books } : {}),
      };
      phases.push(report);
      log(summaryLine(report));
    };
    const none = async () => {};
    const settlementUrl = devnet.chains.settlement?.rpcUrl ?? "";
    let notes: string[] = [];

    if (opts.soakMs) {
      const targets = () => soakTargets(mesh, redis, nats);
      const samples: SoakSample[] = [];
      const snapshots: Map<string, string>[] = [];
      const snapshot = async () => {
        if (!heapDir) return;
        await load.pause(); // no call in flight is stalled past its deadline by the stopped process
        snapshots.push(
          await takeHeapSnapshots(
            targets().filter((t) => t.metricsPort),
            heapDir,
          ),
        );
        load.resume();
      };
      // time-based: warm-up before measuring: JIT, pools and caches settle first.
      await sleep(short ? 5_000 : 20_000); // warm-up: JIT, pools and caches settle first
      await snapshot();
      const t0 = Date.now();
      let midTaken = false;
      for (let i = 0; Date.now() - t0 < opts.soakMs; i++) {
        const t = (Date.now() - t0) / 60_000;
        const now = await sample(targets(), t);
        // Once a minute, the live heap (a full collection in each service: not every 10 s, so the
        // probe does not do the collector's work for it and flatten what RSS shows).
        // The load waits meanwhile: a collection of everything stops a service for a moment, and a
        // call it held past its deadline would blur the books, not the memory.
        if (probeDir && i % 6 === 0) {
          await load.pause();
          const live = await probeLiveHeap(
            targets().filter((x) => x.metricsPort),
            probeDir,
          ).finally(() => load.resume());
          for (const s of now) {
            const kb = live.get(s.process);
            if (kb !== undefined) s.liveHeapKb = kb;
          }
        }
        samples.push(...now);
        if (!midTaken && Date.now() - t0 >= opts.soakMs / 2) {
          midTaken = true;
          await snapshot();
        }
        // time-based: paces the run: one look at the mesh every 10 s while the load runs.
        await sleep(10_000);
      }
      await snapshot();
      // What the load saw while sampled (the phase below starts a fresh count for its own window).
      const during = tally.newPhase();
      await phase("soak (no fault)", none, none, 0);
      const minutes = opts.soakMs / 60_000;
      const heap = [...(snapshots[0]?.keys() ?? [])].map((name) =>
        heapGrowth(
          name,
          snapshots.flatMap((s) => s.get(name) ?? []),
        ),
      );
      const outboxFiles = countFiles(join(mesh.stateDir, "outbox"));
      return finish({
        minutes: round(minutes),
        slopes: slopes(samples, minutes),
        outboxFiles,
        answered: Object.fromEntries(CLASSES.map((c) => [c, during[c].statuses])) as PhaseReport["answered"],
        reasons: Object.fromEntries(CLASSES.map((c) => [c, during[c].reasons])) as PhaseReport["reasons"],
        samples,
        ...(heap.length ? { heapSnapshots: heap } : {}),
        ...(pods
          ? { pods: { limitsMb: pods.limitsMb, peakMb: pods.peakMb(), oomKills: pods.oomKills() } }
          : {}),
      });
    }

    if (clusters) {
      await runClusterFaults({
        phase,
        note: (line) => notes.push(line),
        hold,
        redis: clusters.redis,
        nats: clusters.nats,
        log,
      });
      return finish(undefined);
    }
    await runFaults({
      phase,
      note: (line) => notes.push(line),
      hold,
      short,
      mesh,
      redis,
      redisLink,
      nats,
      upstreams,
      settlementUrl,
      silentGivenUp,
    });
    return finish(undefined);

    function finish(soak: ChaosReport["soak"]): ChaosReport {
      const last = phases.at(-1)?.check;
      return {
        mode,
        startedAt: new Date(started).toISOString(),
        durationS: round((Date.now() - started) / 1000),
        load: {
          keyAccounts: accounts.length,
          x402Payers: x402Payers.length,
          batchPayers: 1,
          mppPayers: 1,
          sessionPayers: 1,
        },
        phases,
        totals: {
          answered: tally.total.answered,
          served: tally.total.served,
          bad5xx: phases.reduce((n, p) => n + p.bad5xx, 0),
          lost: last?.lost ?? 0,
          duplicated: last?.duplicated ?? 0,
          chargedNotServed: last
            ? String(BigInt(last.charged.onChain) - BigInt(last.charged.forServed))
            : "0",
          servedTwice: tally.servedTwice,
          maxRecoverS: Math.max(0, ...phases.flatMap((p) => Object.values(p.recoverS))),
        },
        ...(soak ? { soak } : {}),
      };
    }
  } catch (err) {
    log(lines.slice(-60).join("\n"));
    throw err;
  } finally {
    for (const fn of cleanup) await fn().catch((e) => log(`cleanup: ${e}`));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The cluster run's Redis Cluster and NATS cluster, stopped with the run. */
async function startClusters(dir: string, cleanup: (() => Promise<void>)[]) {
  const redis = await OwnRedisCluster.start(mkdir(dir, "redis-cluster"));
  cleanup.push(() => redis.stop());
  const nats = await OwnNatsCluster.start(mkdir(dir, "nats-cluster"));
  cleanup.push(() => nats.stop());
  return { redis, nats };
}

function mkdir(base: string, name: string): string {
  const path = join(base, name);
  mkdirSync(path, { recursive: true });
  return path;
}

function soakTargets(mesh: Mesh, redis: OwnServer, nats: OwnServer): SoakTarget[] {
  const list: [string, RunningService | undefined, number | undefined][] = [
    ...Object.entries(mesh.services).map(
      ([name, s]) =>
        [name, s, mesh.ports[name as keyof Mesh["ports"]]?.metrics] as [string, RunningService, number],
    ),
    ...mesh.replicas.map(
      (r, i) => [`${r.name}#${i + 2}`, r.service, r.ports.metrics] as [string, RunningService, number],
    ),
  ];
  const targets = list.flatMap(([process, s, metricsPort]) =>
    s?.child.pid ? [{ process, pid: s.child.pid, ...(metricsPort ? { metricsPort } : {}) }] : [],
  );
  if (redis.pid) targets.push({ process: "redis-server", pid: redis.pid });
  if (nats.pid) targets.push({ process: "nats-server", pid: nats.pid });
  return targets;
}

function countFiles(dir: string): number {
  try {
    return readdirSync(dir, { recursive: true }).length;
  } catch {
    return 0;
  }
}
