// The chaos run (issue 16): a mesh from deploy/local on its own Redis, NATS and database, two
// upstream front doors of one node and two payment-verifier replicas, under a steady mixed load
// (API keys on several accounts; x402 exact and x402-batch paid with the official client), while
// faults are injected one after another with recovery between. After each fault it reconciles what
// the load generator saw against the windows (Redis), the usage rollups and the payment ledger
// (PostgreSQL) and the chain: nothing lost, nothing twice, nothing charged that was not served.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { priceAtomic } from "@tollgate/catalog";
import type { DevnetFile } from "@tollgate/devnet";
import { type Mesh, meshAdmin, type RunningService, startMesh } from "@tollgate/local";
import { REDIS_LINK_SILENT } from "@tollgate/platform";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { Receipt } from "mppx";
import { mppChargePayer, mppSessionPayer, tempoChain, tip20Balance } from "../support/mppx.ts";
import { nodeRpc as anvil } from "../support/node-rpc.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";
import { type Address, settlementClient, usdcBalance, x402Payer } from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";
import { type OwnServer, ownNats, ownRedis, Upstream } from "./servers.ts";
import {
  type HeapGrowth,
  heapGrowth,
  probeLiveHeap,
  type SoakSample,
  type SoakSlope,
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
  log?: (line: string) => void;
}

type Class = "key" | "x402" | "batch" | "mpp" | "session";
const CLASSES: Class[] = ["key", "x402", "batch", "mpp", "session"];

interface ClassStats {
  statuses: Record<string, number>;
  /** Answers that were 200. */
  served: number;
  /** API-key 200s without X-Quota headers: served while metering was out of reach (spec 8.3). */
  failOpen: number;
  /** Answers with a status of 500 or one not in the error table's 5xx (502/503/504). */
  bad5xx: number;
  lastFailureAt: number;
  firstFailureAt: number;
  /** The refusals seen, by status and code, with one message each (diagnosis). */
  reasons: Record<string, string>;
}

interface PhaseReport {
  fault: string;
  /** Seconds the fault was held (until the part came back). */
  heldS: number;
  /** Per class: answers by status. */
  answered: Record<Class, Record<string, number>>;
  served: Record<Class, number>;
  failOpen: number;
  /** Seconds from the part being back to the last failed answer (0: none failed after). */
  recoverS: Record<Class, number>;
  /** Answers with a 500 (never acceptable), or 5xx outside 502/503/504. */
  bad5xx: number;
  /** The refusals seen, by class, status and code, with one message each. */
  reasons: Record<Class, Record<string, string>>;
  /** What the fault found when it struck (e.g. settlements in flight). */
  notes: string[];
  /** Reconciliation after recovery (cumulative since the start). */
  check: Reconciliation;
}

interface Reconciliation {
  /** Per account: X-Quota-Day-Used vs the load generator's served-with-headers tally. */
  windowsExact: boolean;
  /**
   * API-key calls answered 503 so far because Authorize did not answer within its deadline (or
   * quota-meter was down): the most the windows can be over the tally (a late Authorize counted a
   * unit the gateway had given up on).
   */
  authGaveUp: number;
  windows: { account: string; window: number; tally: number }[];
  /** usage_daily.counted vs tally, and requests vs calls reported. */
  usageCounted: { pg: number; tally: number };
  usageRequests: { pg: number; tally: number };
  /** Payment ledger (settlement worker) settled rows of the exact payers vs paid calls served. */
  ledgerSettled: { pg: number; tally: number; duplicateTransactions: number };
  /** What the exact payers paid on chain vs price × served. */
  charged: { onChain: string; forServed: string };
  /** The batch channel's charged cumulative amount vs price × served batch calls. */
  batchCharged: { channel: string; forServed: string };
  /** What the MPP charge payer's transfers brought the payee (pathUSD, on chain) vs price × served. */
  mppCharged: { onChain: string; forServed: string };
  /**
   * The MPP session channel: what the server accepted (the receipts' `spent`) vs price × served,
   * and what has been settled to the payee on chain (USDC.e) by the scheduled session settle.
   */
  session: { accepted: string; forServed: string; settled: string };
  /** Paid answers that named a settlement transaction another answer already named. */
  servedTwice: number;
  /** Seconds until the rollups and the ledger matched the tally. */
  convergeS: number;
  lost: number;
  duplicated: number;
}

export interface ChaosReport {
  mode: "full" | "short" | "soak";
  startedAt: string;
  durationS: number;
  load: {
    keyAccounts: number;
    x402Payers: number;
    batchPayers: number;
    mppPayers: number;
    sessionPayers: number;
  };
  phases: PhaseReport[];
  totals: {
    answered: Record<Class, number>;
    served: Record<Class, number>;
    bad5xx: number;
    lost: number;
    duplicated: number;
    chargedNotServed: string;
    servedTwice: number;
    maxRecoverS: number;
  };
  soak?: {
    minutes: number;
    slopes: SoakSlope[];
    outboxFiles: number;
    /** Answers while sampled, by class and status, and one message per refusal (the soak's phase counts only its own window). */
    answered: PhaseReport["answered"];
    reasons: PhaseReport["reasons"];
    /** Every sample (minutes since the soak started), for plotting or a second look. */
    samples: SoakSample[];
    heapSnapshots?: HeapGrowth[];
  };
}

const PRICE = priceAtomic("0.001"); // chain-id and block-number

/** USDC for the MPP session's channel: ten minutes of calls at 5 a second beyond the soak, if any. */
function sessionDeposit(soakMs = 0): string {
  return String(Math.ceil(((soakMs / 1000 + 600) * 5 * Number(PRICE)) / 1e6));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

function emptyStats(): ClassStats {
  return {
    statuses: {},
    served: 0,
    failOpen: 0,
    bad5xx: 0,
    lastFailureAt: 0,
    firstFailureAt: 0,
    reasons: {},
  };
}

/** What the load generator saw: per phase, and the tallies the system of record is checked against. */
const perClass = <T>(make: () => T) =>
  Object.fromEntries(CLASSES.map((c) => [c, make()])) as Record<Class, T>;

class Tally {
  phase: Record<Class, ClassStats> = perClass(emptyStats);
  /** Per account id: API-key 200s that carried X-Quota headers (counted in the windows). */
  readonly counted = new Map<string, number>();
  /** Per account id: API-key answers the gateway reports as usage (every answer past auth). */
  readonly reported = new Map<string, number>();
  readonly lastWindow = new Map<string, number>();
  /** Per exact payer: paid calls served. */
  readonly x402Served = new Map<string, number>();
  batchServed = 0;
  /** API-key calls answered 503 because Authorize did not answer in time (its unit may be counted). */
  authGaveUp = 0;
  batchCumulative = 0n;
  mppServed = 0;
  sessionServed = 0;
  /** The session channel's accepted amount, as the last served call's receipt gave it. */
  sessionSpent = 0n;
  readonly transactions = new Set<string>();
  servedTwice = 0;
  readonly total = { answered: perClass(() => 0), served: perClass(() => 0) };

  record(cls: Class, status: number, reason = "", t = now()): void {
    const s = this.phase[cls];
    // No answer at all: the connection was refused (the gateway was down, nothing was sent) or cut
    // with the request on it.
    const label = status === 0 ? (reason.includes("ECONNREFUSED") ? "refused" : "cut") : String(status);
    if (status !== 200) {
      const key = `${label} ${/"code":"([a-z_]+)"/.exec(reason)?.[1] ?? ""}`.trim();
      if (!(key in s.reasons)) s.reasons[key] = reason.slice(0, 300);
    }
    s.statuses[label] = (s.statuses[label] ?? 0) + 1;
    this.total.answered[cls]++;
    if (status === 200) {
      s.served++;
      this.total.served[cls]++;
      return;
    }
    // A 402 on a paid class mid-fault is the payment being refused or re-synchronised; still a failure.
    if (!s.firstFailureAt) s.firstFailureAt = t;
    s.lastFailureAt = t;
    if (status === 500 || (status > 500 && ![502, 503, 504].includes(status))) s.bad5xx++;
  }

  newPhase(): Record<Class, ClassStats> {
    const done = this.phase;
    this.phase = perClass(emptyStats);
    return done;
  }
}

interface Account {
  id: string;
  key: string;
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
    const mesh = await startOnFreePorts({
      stateDir: mkdir(dir, "state"),
      paymentVerifierReplicas: 2,
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
      },
      serviceEnv: {
        // A hung node is given up on quickly, so its calls fail over rather than time out.
        "rpc-proxy": {
          UPSTREAM_TIMEOUT_MS: "1000",
          UPSTREAM_BREAKER_COOLDOWN_MS: "2000",
          UPSTREAM_HEAD_POLL_MS: "500",
        },
        // The session channel is settled on chain during the run (every 20 calls' worth).
        "settlement-worker": {
          MPP_SESSION_SETTLE_MIN_AMOUNT: "0.02",
          MPP_SESSION_SETTLE_TICK_SECONDS: "2",
        },
        "payment-verifier": {
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

    const load = startLoad(mesh, accounts, x402Payers, batch, mpp, tally);
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
      await sleep(heldMs);
      await lift();
      const liftedAt = now();
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
      });
    }

    await sleep(hold(10, 4));
    await phase("baseline (no fault)", none, none, 0);
    await phase(
      "Redis stopped, restarted",
      () => redis.stop(),
      () => redis.start(),
      hold(15, 5),
    );
    await phase(
      "Redis links cut with replies in flight (stand-in: TCP proxy in front of the real Redis)",
      async () => {
        // Redis runs what reaches it for 0.3 s (reservations, settlement begins, key locks, quota
        // grants) but its replies are held, then every link is dropped with them: state written that
        // no caller knows it holds, to be cleaned up once Redis answers again.
        redisLink.holdReplies();
        await sleep(300);
        await redisLink.cut();
      },
      () => redisLink.restore(),
      hold(5, 3),
    );
    await phase(
      "Redis links gone silent with replies in flight (stand-in: TCP proxy in front of the real Redis)",
      async () => {
        // As above, but the links are never reset: every byte on them is dropped and neither end
        // hears of it (a partition, a dropped NAT entry). Each service must give its link up on its
        // own (a PING unanswered 3 s) and connect anew; new links flow at once.
        silentGivenUp.clear();
        redisLink.holdReplies();
        await sleep(300);
        redisLink.silence();
        await redisLink.restore();
      },
      async () => {
        const given = [...silentGivenUp].sort(([a], [b]) => a.localeCompare(b));
        notes.push(
          `Redis links given up: ${given.map(([s, pids]) => `${s}×${pids.size}`).join(", ") || "none"}`,
        );
      },
      hold(6, 5),
    );
    await phase(
      `NATS stopped ${short ? 8 : 30} s, restarted`,
      () => nats.stop(),
      () => nats.start(),
      hold(30, 8),
    );
    await phase(
      "upstream 1 of 2 killed",
      () => (upstreams[0] as Upstream).kill(),
      () => (upstreams[0] as Upstream).restore(),
      hold(15, 5),
    );
    await phase(
      "upstream 1 of 2 hung (stand-in: accepts, never answers)",
      () => (upstreams[0] as Upstream).hang(),
      () => (upstreams[0] as Upstream).restore(),
      hold(15, 6),
    );
    await phase(
      "payment-verifier replica killed mid-settlement",
      async () => {
        // Mid-settlement for certain: the settlement chain stops mining, so each replica's
        // settlement transfer waits in the mempool; one replica is killed while they wait.
        await anvil(settlementUrl, "evm_setAutomine", [false]);
        const t0 = now();
        let pending = 0;
        while (pending < 2 && now() - t0 < 5_000) {
          pending = Number((await anvil<{ pending: string }>(settlementUrl, "txpool_status", [])).pending);
          await sleep(10);
        }
        notes.push(`${pending} settlement transfers were waiting in the mempool at the kill`);
        mesh.services["payment-verifier"].child.kill("SIGKILL");
        await sleep(500);
        await anvil(settlementUrl, "evm_setAutomine", [true]);
        await anvil(settlementUrl, "evm_mine", []);
      },
      () => mesh.restart("payment-verifier"),
      hold(5, 2),
    );
    await phase(
      "quota-meter killed, restarted",
      async () => {
        mesh.services["quota-meter"].child.kill("SIGKILL");
      },
      () => mesh.restart("quota-meter"),
      hold(5, 3),
    );
    await phase(
      "gateway SIGTERM, restarted",
      () => mesh.services.gateway.stop(),
      () => mesh.restart("gateway"),
      hold(2, 1),
    );
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

function mkdir(base: string, name: string): string {
  const path = join(base, name);
  mkdirSync(path, { recursive: true });
  return path;
}

const round = (n: number) => Math.round(n * 10) / 10;

/** The steady mixed load: loops per account and per payer, each one call at a time. */
function startLoad(
  mesh: Mesh,
  accounts: Account[],
  payers: ReturnType<typeof x402Payer>[],
  batch: ReturnType<typeof batchPayer>,
  mpp: { charge: ReturnType<typeof mppChargePayer>; session: ReturnType<typeof mppSessionPayer> },
  tally: Tally,
) {
  let running = true;
  // Paused, each loop waits before its next call: the reconciliation reads a quiet mesh.
  let paused: Promise<void> | undefined;
  let resume = () => {};
  let inFlight = 0;
  const gate = async () => {
    inFlight--;
    while (paused) await paused;
    inFlight++;
  };
  const loops: Promise<void>[] = [];
  const url = (path: string) => `${mesh.gatewayUrl}${path}`;
  const keyLoop = async (account: Account, path: string) => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await fetch(url(path), {
          headers: { authorization: `Bearer ${account.key}` },
          signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        const used = res.headers.get("x-quota-day-used");
        const text = await res.text();
        if (status !== 200) reason = text;
        // Usage is reported for every call past authorization (not when quota-meter could not say).
        if (text.includes("API-key service is unavailable")) tally.authGaveUp++;
        const authorized =
          status !== 429 && status !== 401 && !text.includes("API-key service is unavailable");
        if (authorized) tally.reported.set(account.id, (tally.reported.get(account.id) ?? 0) + 1);
        if (status === 200 && used !== null) {
          tally.counted.set(account.id, (tally.counted.get(account.id) ?? 0) + 1);
          tally.lastWindow.set(account.id, Number(used));
        }
        if (status === 200 && used === null) tally.phase.key.failOpen++;
      } catch (err) {
        status = 0; // no answer at all (the gateway was down): not a 5xx, but a failure
        reason = errorText(err);
      }
      tally.record("key", status, reason);
      if (status === 0) await sleep(100);
      await sleep(60);
    }
  };
  const x402Loop = async (payer: ReturnType<typeof x402Payer>) => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const pending = payer.fetch(url("/api/chain/chain-id"), { signal: AbortSignal.timeout(30_000) });
        const res = await pending;
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 200) {
          const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
          if (receipt.transaction && tally.transactions.has(receipt.transaction)) tally.servedTwice++;
          if (receipt.transaction) tally.transactions.add(receipt.transaction);
          tally.x402Served.set(payer.address, (tally.x402Served.get(payer.address) ?? 0) + 1);
        }
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("x402", status, reason);
      await sleep(status === 0 ? 300 : 150);
    }
  };
  const batchLoop = async () => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await batch.fetch(url("/api/chain/block-number"), {
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 402 && text.includes("mismatch") && process.env.CHAOS_DEBUG) {
          const offer = res.headers.get("payment-required") ?? "";
          const decoded = JSON.parse(Buffer.from(offer, "base64").toString("utf8")) as {
            accepts: { extra: unknown }[];
          };
          process.stderr.write(`batch mismatch: ${JSON.stringify(decoded.accepts.map((a) => a.extra))}\n`);
        }
        if (status === 200) {
          tally.batchServed++;
          const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
          const state = (receipt.extra as { channelState?: { chargedCumulativeAmount?: string } } | undefined)
            ?.channelState;
          if (state?.chargedCumulativeAmount) tally.batchCumulative = BigInt(state.chargedCumulativeAmount);
        }
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("batch", status, reason);
      await sleep(status === 0 ? 300 : 200);
    }
  };
  const mppChargeLoop = async () => {
    const references = new Set<string>();
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await mpp.charge.fetch(url("/api/chain/chain-id"), {
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 200) {
          tally.mppServed++;
          // Each charge is its own transfer: one named twice was served twice.
          const reference = Receipt.fromResponse(res).reference;
          if (references.has(reference)) tally.servedTwice++;
          references.add(reference);
        }
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("mpp", status, reason);
      await sleep(status === 0 ? 300 : 200);
    }
  };
  const sessionLoop = async () => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await mpp.session.manager.fetch(url("/api/chain/block-number"), {
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 200) {
          tally.sessionServed++;
          if (res.receipt?.spent) tally.sessionSpent = BigInt(res.receipt.spent);
        }
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("session", status, reason);
      await sleep(status === 0 ? 300 : 200);
    }
  };
  for (const a of accounts) {
    loops.push(keyLoop(a, "/api/chain/block-number"), keyLoop(a, "/api/chain/chain-id"));
  }
  loops.push(mppChargeLoop(), sessionLoop());
  for (const p of payers) loops.push(x402Loop(p));
  loops.push(batchLoop());
  inFlight = loops.length;
  return {
    /** Stops new calls and resolves once every loop is between calls. */
    async pause() {
      paused = new Promise<void>((r) => {
        resume = r;
      });
      while (inFlight > 0) await sleep(20);
    },
    resume() {
      paused = undefined;
      resume();
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/**
 * After recovery: the windows (a metered call per account), the usage rollups and the ledger
 * (PostgreSQL, polled until they stop moving) and the chain, each against the tally.
 */
async function reconcile(
  mesh: Mesh,
  database: TestDatabase,
  accounts: Account[],
  payers: ReturnType<typeof x402Payer>[],
  tally: Tally,
  chain: ReturnType<typeof settlementClient>,
  devnet: DevnetFile,
  paidBefore: Map<string, bigint>,
  /** What the MPP payee received since the start: charges (pathUSD) and session settles (USDC.e). */
  mppPayee: () => Promise<{ charged: bigint; settled: bigint }>,
  log: (line: string) => void,
): Promise<Reconciliation> {
  // The load is paused: the tally is final; wait until PostgreSQL has folded every event.
  const snapshot = {
    counted: sum(tally.counted),
    reported: sum(tally.reported),
    x402: sum(tally.x402Served),
  };
  const t0 = now();
  const addresses = payers.map((p) => p.address.toLowerCase());
  let usage = { requests: 0, counted: 0 };
  let ledger = { settled: 0, transactions: 0 };
  const ids = accounts.map((a) => a.id);
  for (;;) {
    const [u] = await database.query<{ requests: string | null; counted: string | null }>(
      "SELECT sum(requests) AS requests, sum(counted) AS counted FROM usage_daily WHERE account_id = ANY($1)",
      [ids],
    );
    const [l] = await database.query<{ settled: string; transactions: string }>(
      `SELECT count(*) AS settled, count(DISTINCT "transaction") AS transactions FROM settlements
       WHERE outcome = 'settled' AND scheme = 'exact' AND lower(payer) = ANY($1)`,
      [addresses],
    );
    usage = { requests: Number(u?.requests ?? 0), counted: Number(u?.counted ?? 0) };
    ledger = { settled: Number(l?.settled ?? 0), transactions: Number(l?.transactions ?? 0) };
    const caughtUp =
      usage.counted === snapshot.counted &&
      usage.requests === snapshot.reported &&
      ledger.settled === snapshot.x402;
    if (caughtUp || now() - t0 > 30_000) break;
    await sleep(250);
  }
  const convergeS = round((now() - t0) / 1000);

  // Windows: once every lease has ended and given back its unused units (1 s TTL, 250 ms sweep),
  // one more metered call per account, recorded in the tally like any other.
  await sleep(1_500);
  const windows: Reconciliation["windows"] = [];
  for (const a of accounts) {
    let window = -1;
    for (let i = 0; i < 20 && window < 0; i++) {
      const res = await fetch(`${mesh.gatewayUrl}/api/chain/chain-id`, {
        headers: { authorization: `Bearer ${a.key}` },
      });
      await res.arrayBuffer();
      tally.record("key", res.status);
      if (res.status !== 200) continue;
      tally.reported.set(a.id, (tally.reported.get(a.id) ?? 0) + 1);
      const used = res.headers.get("x-quota-day-used");
      if (used === null) {
        tally.phase.key.failOpen++;
        await sleep(200);
        continue;
      }
      tally.counted.set(a.id, (tally.counted.get(a.id) ?? 0) + 1);
      window = Number(used);
    }
    windows.push({ account: a.id, window, tally: tally.counted.get(a.id) ?? 0 });
  }

  // The chain: what the exact payers paid vs what was served to them.
  let onChain = 0n;
  for (const p of payers)
    onChain += (paidBefore.get(p.address) ?? 0n) - (await usdcBalance(chain, devnet, p.address as Address));
  const served = BigInt(sum(tally.x402Served));
  const payee = await mppPayee();
  const usageCounted = { pg: usage.counted, tally: snapshot.counted };
  const usageRequests = { pg: usage.requests, tally: snapshot.reported };
  const ledgerSettled = {
    pg: ledger.settled,
    tally: snapshot.x402,
    duplicateTransactions: ledger.settled - ledger.transactions,
  };
  const lost =
    Math.max(0, usageCounted.tally - usageCounted.pg) +
    Math.max(0, usageRequests.tally - usageRequests.pg) +
    Math.max(0, ledgerSettled.tally - ledgerSettled.pg);
  const duplicated =
    Math.max(0, usageCounted.pg - usageCounted.tally) +
    Math.max(0, usageRequests.pg - usageRequests.tally) +
    Math.max(0, ledgerSettled.pg - ledgerSettled.tally) +
    ledgerSettled.duplicateTransactions;
  if (lost || duplicated) log(`reconcile: ${JSON.stringify({ usageCounted, usageRequests, ledgerSettled })}`);
  return {
    windowsExact: windows.every((w) => w.window === w.tally),
    authGaveUp: tally.authGaveUp,
    windows,
    usageCounted,
    usageRequests,
    ledgerSettled,
    charged: { onChain: String(onChain), forServed: String(PRICE * served) },
    batchCharged: {
      channel: String(tally.batchCumulative),
      forServed: String(PRICE * BigInt(tally.batchServed)),
    },
    mppCharged: { onChain: String(payee.charged), forServed: String(PRICE * BigInt(tally.mppServed)) },
    session: {
      accepted: String(tally.sessionSpent),
      forServed: String(PRICE * BigInt(tally.sessionServed)),
      settled: String(payee.settled),
    },
    servedTwice: tally.servedTwice,
    convergeS,
    lost,
    duplicated,
  };
}

function errorText(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return `${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? ""} ${e.cause.message ?? ""})` : ""}`;
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

function summaryLine(p: PhaseReport): string {
  const statuses = (c: Class) =>
    Object.entries(p.answered[c])
      .map(([s, n]) => `${s}×${n}`)
      .join(" ");
  return `  ${p.fault}: key[${statuses("key")}] x402[${statuses("x402")}] batch[${statuses("batch")}] mpp[${statuses("mpp")}] session[${statuses("session")}] failOpen=${p.failOpen} recover=${JSON.stringify(p.recoverS)} lost=${p.check.lost} dup=${p.check.duplicated} windowsExact=${p.check.windowsExact} charged=${p.check.charged.onChain}/${p.check.charged.forServed} mpp=${p.check.mppCharged.onChain}/${p.check.mppCharged.forServed} session=${p.check.session.accepted}/${p.check.session.forServed} settled=${p.check.session.settled} ${p.notes.join("; ")}`;
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

/** The table the README shows: one row per fault. */
export function table(report: ChaosReport): string {
  const head =
    "| Fault | Held s | API-key answers (status×n) | x402 exact | x402-batch | MPP charge | MPP session | Fail-open | Recover s (key/x402/batch/mpp/session) | 5xx other than 502/503/504 | Lost | Duplicated | Windows exact | Charged − served (µUSDC: x402/MPP charge/session) | Session settled (µUSDC) |";
  const rule = `|${"---|".repeat(15)}`;
  const over = (charged: string, forServed: string) => String(BigInt(charged) - BigInt(forServed));
  const fmt = (r: Record<string, number>) =>
    Object.entries(r)
      .map(([s, n]) => `${s}×${n}`)
      .join(" ");
  const rows = report.phases.map((p) =>
    [
      p.fault,
      p.heldS,
      fmt(p.answered.key),
      fmt(p.answered.x402),
      fmt(p.answered.batch),
      fmt(p.answered.mpp),
      fmt(p.answered.session),
      p.failOpen,
      CLASSES.map((c) => p.recoverS[c]).join("/"),
      p.bad5xx,
      p.check.lost,
      p.check.duplicated,
      p.check.windowsExact ? "yes" : "NO",
      [
        over(p.check.charged.onChain, p.check.charged.forServed),
        over(p.check.mppCharged.onChain, p.check.mppCharged.forServed),
        over(p.check.session.accepted, p.check.session.forServed),
      ].join("/"),
      p.check.session.settled,
    ].join(" | "),
  );
  return [head, rule, ...rows.map((r) => `| ${r} |`)].join("\n");
}
