// The chaos run's faults, one after another with recovery between: Redis stopped, its links cut
// or gone silent with replies in flight, NATS stopped, an upstream killed or hung, a
// payment-verifier replica killed mid-settlement, quota-meter killed, the gateway stopped.
// Each is one phase of the run (chaos.ts): inject, hold, lift, watch recovery, reconcile.
import type { Mesh } from "@tollgate/local";
import { eventually, sleep } from "../support/eventually.ts";
import { nodeRpc as anvil } from "../support/node-rpc.ts";
import type { tcpProxy } from "../support/tcp-proxy.ts";
import type { OwnServer, Upstream } from "./servers.ts";

/** What the faults strike, and the run's phase runner. */
export interface FaultTargets {
  /** One fault: inject, hold, lift, watch recovery, then reconcile. */
  phase: (
    fault: string,
    inject: () => Promise<void>,
    lift: () => Promise<void>,
    heldMs: number,
  ) => Promise<void>;
  /** Adds a line to the running phase's notes (what the fault found when it struck). */
  note: (line: string) => void;
  /** A hold of the full run, or of the short (CI) form, in ms. */
  hold: (fullS: number, shortS: number) => number;
  short: boolean;
  mesh: Mesh;
  redis: OwnServer;
  /** The TCP proxy the mesh reaches Redis through. */
  redisLink: Awaited<ReturnType<typeof tcpProxy>>;
  nats: OwnServer;
  upstreams: Upstream[];
  settlementUrl: string;
  /** Per service, the processes that gave up a silent Redis link (its connector's warning). */
  silentGivenUp: Map<string, Set<string>>;
}

/** Runs every fault in turn, after a baseline phase with none. */
export async function runFaults(targets: FaultTargets): Promise<void> {
  const { phase, note, hold, short, mesh, redis, redisLink, nats, upstreams, settlementUrl, silentGivenUp } =
    targets;
  const none = async () => {};
  // time-based: the pause between faults.
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
      // time-based: writes run with their replies held for a while (the fault's shape).
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
      // time-based: writes run with their replies held for a while (the fault's shape).
      await sleep(300);
      redisLink.silence();
      await redisLink.restore();
    },
    async () => {
      const given = [...silentGivenUp].sort(([a], [b]) => a.localeCompare(b));
      note(`Redis links given up: ${given.map(([s, pids]) => `${s}×${pids.size}`).join(", ") || "none"}`);
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
      const pending = await eventually(
        async () => Number((await anvil<{ pending: string }>(settlementUrl, "txpool_status", [])).pending),
        (n) => n >= 2,
        5_000,
        10,
      );
      note(`${pending} settlement transfers were waiting in the mempool at the kill`);
      mesh.services["payment-verifier"].child.kill("SIGKILL");
      // time-based: holds the fault: the dead replica's transfers wait unmined a while before the
      // chain mines again (what the takeover must live through).
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
}
