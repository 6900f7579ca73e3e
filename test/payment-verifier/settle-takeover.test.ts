// A payment-verifier replica killed (SIGKILL) mid-settlement, after its scheme sent the money and
// before it answered: the gateway's Settle sent once more reaches the other replica, which waits for
// the dead owner's liveness to lapse, takes the settlement over and finds what the owner sent. The
// call is served once and paid once. Two real processes sharing the real Redis and the devnet's
// chains; each chain stops mining while the owner is killed, so its transfer is still in the mempool.
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import { freePort, mppDevnetEnv, type RunningService, spawnService, x402DevnetEnv } from "@tollgate/local";
import { type CallError, checkHealth } from "@tollgate/platform";
import { Credential } from "mppx";
import { Mppx as MppxClient, tempo as tempoPayer } from "mppx/client";
import { createClient as createRedis } from "redis";
import { type Address, isAddressEqual } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, until } from "../support/eventually.ts";
import { MESH_CALLERS_ENV } from "../support/mesh.ts";
import { paymentRequiredResponse, tempoClient, tip20Balance } from "../support/mppx.ts";
import { nodeRpc as node } from "../support/node-rpc.ts";
import { batchPayer } from "../support/x402-batch.ts";
import {
  BLOCK_NUMBER,
  challenge,
  cleanUp,
  type Header,
  headerGetter,
  pay,
  payer,
  priceOf,
  resource,
  settlementReader,
  startSettlementDevnet,
  uniqueId,
  usdcBalance,
  type VerifierClient,
  verifierClient,
} from "./support.ts";

const USDC_E = "0x20C000000000000000000000b9537d11c60E8b50" as Address;
const account = (role: string) => {
  const found = devnet.accounts.find((x) => x.role === role);
  if (!found) throw new Error(`no devnet account ${role}`);
  return found.privateKey;
};

let devnet: Devnet;
const namespace = uniqueId("pvtakeover");
const prefix = `${uniqueId("test:pvtakeover:")}:`;
const outboxDirs: string[] = [];
const running: RunningService[] = [];
const lines: string[] = [];

interface Replica {
  service: RunningService;
  client: VerifierClient;
}

/** One payment-verifier process, configured only by environment, as deploy/local runs it. */
async function replica(shared: Record<string, string>): Promise<Replica> {
  const grpc = await freePort();
  const outbox = mkdtempSync(join(tmpdir(), "pv-outbox-"));
  outboxDirs.push(outbox);
  const service = await spawnService(
    "payment-verifier",
    {
      ...shared,
      GRPC_PORT: String(grpc),
      METRICS_PORT: String(await freePort()),
      OUTBOX_DIR: outbox,
    },
    (_name, line) => lines.push(line),
    () => checkHealth(`127.0.0.1:${grpc}`),
  );
  running.push(service);
  return { service, client: verifierClient(grpc) };
}

let a: Replica;
let b: Replica;
let shared: Record<string, string>;

beforeAll(async () => {
  devnet = await startSettlementDevnet();
  shared = {
    ...x402DevnetEnv(devnet),
    ...mppDevnetEnv(devnet),
    ...MESH_CALLERS_ENV,
    BIND_HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    REDIS_URL: "redis://127.0.0.1:6379",
    REDIS_STANDIN: "false",
    REDIS_PREFIX: prefix,
    NATS_URL: "nats://127.0.0.1:4222",
    EVENTS_NAMESPACE: namespace,
    PAYMENT_SCHEMES: "exact,x402-batch,mpp-charge,mpp-session",
    // One HMAC key for both replicas: a challenge one issued verifies on the other.
    MPP_SECRET_KEY: randomBytes(32).toString("base64"),
    X402_BATCH_AUTHORIZER_PRIVATE_KEY: `0x${randomBytes(32).toString("hex")}`,
  };
  [a, b] = [await replica(shared), await replica(shared)];
}, 120_000);

afterAll(async () => {
  for (const r of [a, b]) r?.client.close();
  for (const s of running) await s.stop();
  await devnet?.stop();
  if (devnet) outboxDirs.push(dirname(devnet.file));
  await cleanUp({ redisPrefixes: [prefix], namespace, outboxDirs });
});

/** A devnet chain as it mines: on each transaction (automine), or every `blockTime` seconds. */
interface Chain {
  url: string;
  automine: boolean;
  blockTime: number;
}

/**
 * Verify on `a`; with `chain` not mining, Settle on `a` until its transfer is in the mempool; kill
 * `a`; the same Settle on `b` (the gateway's retry). `b` waits, takes over, and the chain mines
 * again only after that, so the transfer `a` sent is still pending when `b` looks for it.
 */
/** Waits until no replica holds a settlement key's lock (their unlock is sent without waiting). */
async function untilSignerLocksFree() {
  const redis = createRedis({ url: "redis://127.0.0.1:6379" });
  await redis.connect();
  try {
    const locks = () => redis.keys(`${prefix}*signer:*:lock`);
    expect(await eventually(locks, (held) => held.length === 0, 10_000, 10)).toEqual([]);
  } finally {
    await redis.close();
  }
}

async function killOwnerMidSettlement(chain: Chain, credentials: Header[]) {
  const requestId = uniqueId("req-");
  const v = await a.client.call("Verify", { requestId, resource: resource(BLOCK_NUMBER), credentials });
  expect(v.valid, v.reason).toBe(true);
  const settle = (r: Replica) =>
    r.client.call("Settle", {
      requestId,
      paymentId: v.paymentId,
      resource: resource(BLOCK_NUMBER),
      credentials,
    });
  await node(chain.url, "evm_setAutomine", [false]);
  await node(chain.url, "evm_setIntervalMining", [0]);
  // anvil keeps one mining mode: whichever call comes last sets it (interval 0 is "none").
  const resume = async () => {
    if (chain.automine) {
      await node(chain.url, "evm_setIntervalMining", [chain.blockTime]);
      await node(chain.url, "evm_setAutomine", [true]);
    } else {
      await node(chain.url, "evm_setAutomine", [false]);
      await node(chain.url, "evm_setIntervalMining", [chain.blockTime]);
    }
  };
  try {
    let answer = "";
    const first = settle(a).then(
      (r) => {
        answer = `answered: ${JSON.stringify(r)}`;
        return answer;
      },
      // gRPC status 14, UNAVAILABLE: what the gateway sends its Settle once more on.
      (err: CallError) => (err.failure?.grpcCode === 14 ? "UNAVAILABLE" : err.message),
    );
    const pending = await eventually(
      async () => Number((await node<{ pending: string }>(chain.url, "txpool_status")).pending),
      (n) => n >= 1 || !!answer,
      20_000,
      10,
    );
    expect(pending, `the owner's transfer reached the mempool ${answer}`).toBe(1);
    // Killed once its send has let go of the settlement key (the transfer in the mempool, its
    // receipt not yet read): a kill inside that one round trip is the signer lock's own case,
    // a lock held to the end of its hold (signer-lock.test.ts), not this one.
    await untilSignerLocksFree();
    a.service.child.kill("SIGKILL");
    expect(await first).toBe("UNAVAILABLE");
    const taken = lines.length;
    const retried = settle(b);
    // The dead owner's liveness lapses (2 s), then b takes over: the transfer is still pending.
    await until(
      "b took the settlement over",
      () => lines.slice(taken).some((l) => l.includes("took over")),
      30_000,
      50,
    );
    await resume();
    await node(chain.url, "evm_mine");
    const s = await retried;
    const again = await settle(b);
    return { s, again, log: lines.slice(taken).join("\n") };
  } finally {
    await resume();
  }
}

/** The official mppx client paying MPP `session` (USDC.e) from `role` on the devnet's Tempo chain. */
function sessionPayer(role: string) {
  const tempo = devnet.chains.tempo?.anvilRpcUrl ?? "";
  return MppxClient.create({
    polyfill: false,
    methods: [
      tempoPayer.session({
        account: privateKeyToAccount(account(role)),
        getClient: () => tempoClient(tempo),
        maxDeposit: "0.05",
      }),
    ],
    orderChallenges: (candidates) => candidates.filter((c) => c.challenge.intent === "session"),
  });
}

/**
 * Verify and Settle `credentials` on `b`, then put the reservation back as an owner leaves it that
 * died after its scheme charged the call, before recording the settlement (settling, owned by a
 * replica whose liveness key is gone), and Settle again: `b` takes it over. The crash point is
 * made exact this way where the money moves in a store write, not on a chain that can stop mining.
 */
async function settledByOwnerThatDied(credentials: Header[]) {
  const requestId = uniqueId("req-");
  const v = await b.client.call("Verify", { requestId, resource: resource(BLOCK_NUMBER), credentials });
  expect(v.valid, v.reason).toBe(true);
  const settle = () =>
    b.client.call("Settle", {
      requestId,
      paymentId: v.paymentId,
      resource: resource(BLOCK_NUMBER),
      credentials,
    });
  // payment-verifier writes under <REDIS_PREFIX>payment:.
  const reservation = `${prefix}payment:reservation:${v.paymentId.slice(0, v.paymentId.lastIndexOf("#"))}`;
  const redis = createRedis({ url: "redis://127.0.0.1:6379" });
  await redis.connect();
  let first: Awaited<ReturnType<typeof settle>>;
  try {
    const verified = await redis.hGetAll(reservation);
    expect(verified.state).toBe("reserved");
    first = await settle();
    expect(first.settled, first.reason).toBe(true);
    // Settle answers before it records the settlement: wait for that record (on a loaded machine it
    // trailed the answer, and overwrote the state written below).
    expect(await eventually(() => redis.hGet(reservation, "state"), "settled", 10_000, 50)).toBe("settled");
    await redis.hSet(reservation, { ...verified, state: "settling", owner: uniqueId("dead-replica-") });
    await redis.pExpire(reservation, 60_000);
  } finally {
    await redis.close();
  }
  const taken = lines.length;
  const again = await settle();
  expect(again.settled, again.reason).toBe(true);
  // The replica's log line may trail its answer on the pipe.
  await eventually(() => lines.slice(taken).some((l) => l.includes("took over")), true, 10_000, 50);
  expect(lines.slice(taken).join("\n")).toContain("took over a settlement whose replica died running it");
  return { first, again };
}

describe("payment-verifier: the owner of a settlement killed mid-settlement, its Settle retried on the other replica", () => {
  it("x402 exact: served once (the transfer the dead owner broadcast), paid once", async () => {
    const chain = { url: devnet.chains.settlement?.rpcUrl ?? "", automine: true, blockTime: 0 };
    const { credentials } = await pay(a.client, payer(devnet, "payer1"), BLOCK_NUMBER);
    const payTo = devnet.demo.settlement.payTo;
    const before = await usdcBalance(settlementReader(devnet), devnet, payTo);
    const { s, again, log } = await killOwnerMidSettlement(chain, credentials);
    expect(s.settled, s.reason).toBe(true);
    expect(log).toContain("took over a settlement whose replica died running it");
    expect(await usdcBalance(settlementReader(devnet), devnet, payTo)).toBe(before + priceOf(BLOCK_NUMBER));
    // Asked again: the same answer, nothing collected twice.
    expect(again.settled, again.reason).toBe(true);
    expect(again.headers).toEqual(s.headers);
  });

  it("MPP charge: served once (the transfer the dead owner broadcast), paid once", async () => {
    // A new replica in place of the one killed above takes the Verify and the first Settle.
    a.client.close();
    a = await replica(shared);
    const tempo = devnet.chains.tempo?.anvilRpcUrl ?? "";
    const mpp = MppxClient.create({
      polyfill: false,
      methods: [
        tempoPayer.charge({
          account: privateKeyToAccount(account("payer1")),
          mode: "pull",
          getClient: () => tempoClient(tempo),
        }),
      ],
      orderChallenges: (candidates) =>
        candidates.filter((c) => isAddressEqual(c.challenge.request.currency as Address, USDC_E)),
    });
    const value = await mpp.createCredential(
      paymentRequiredResponse(await challenge(a.client, BLOCK_NUMBER)),
    );
    const payTo = devnet.demo.tempo.payTo;
    const before = await tip20Balance(tempo, USDC_E, payTo);
    // anvil's Tempo mode mines a block every second (the devnet's --block-time 1).
    const chain = { url: tempo, automine: false, blockTime: 1 };
    const { s, again, log } = await killOwnerMidSettlement(chain, [{ name: "Authorization", value }]);
    expect(s.settled, s.reason).toBe(true);
    expect(log).toContain("took over a settlement whose replica died running it");
    expect(await tip20Balance(tempo, USDC_E, payTo)).toBe(before + priceOf(BLOCK_NUMBER));
    expect(again.settled, again.reason).toBe(true);
    expect(again.headers).toEqual(s.headers);
  });

  // A session voucher moves no money on chain: its charge is a write to the channel's record. The
  // crash point is made exact instead: the owner's settlement completes, then the reservation is
  // put back as that owner left it had it died between mppx's charge and its record (settling,
  // owned by a replica whose liveness key is gone).
  it("MPP session: a voucher the dead owner charged is answered, not charged again", async () => {
    const mpp = sessionPayer("payer2");
    const value = await mpp.createCredential(
      paymentRequiredResponse(await challenge(b.client, BLOCK_NUMBER)),
    );
    const { first, again } = await settledByOwnerThatDied([{ name: "Authorization", value }]);
    // The same charge: the channel spent the price once.
    const spent = (headers: Header[]) =>
      JSON.parse(Buffer.from(headers[0]?.value ?? "", "base64url").toString()).spent as string;
    expect(spent(again.headers)).toBe(String(priceOf(BLOCK_NUMBER)));
    expect(spent(again.headers)).toBe(spent(first.headers));
  });

  it("MPP session open the dead owner broadcast before mppx recorded the channel: served once, the channel recorded and this call charged from it", async () => {
    a.client.close();
    a = await replica(shared);
    const mpp = sessionPayer("payer4");
    const value = await mpp.createCredential(
      paymentRequiredResponse(await challenge(a.client, BLOCK_NUMBER)),
    );
    expect((Credential.deserialize(value).payload as { action: string }).action).toBe("open");
    // The open is in the mempool (anvil's Tempo mode mines every second; paused here) when the
    // owner dies waiting for its receipt, before mppx records the channel.
    const chain = { url: devnet.chains.tempo?.anvilRpcUrl ?? "", automine: false, blockTime: 1 };
    const { s, again, log } = await killOwnerMidSettlement(chain, [{ name: "Authorization", value }]);
    expect(s.settled, s.reason).toBe(true);
    expect(log).toContain("took over a settlement whose replica died running it");
    const receipt = (headers: Header[]) =>
      JSON.parse(Buffer.from(headers[0]?.value ?? "", "base64url").toString()) as {
        spent: string;
        txHash?: string;
      };
    // This call charged once from the channel the dead owner opened (one open, on chain).
    expect(receipt(s.headers).spent).toBe(String(priceOf(BLOCK_NUMBER)));
    expect(again.settled, again.reason).toBe(true);
    expect(again.headers).toEqual(s.headers);
  });

  it("x402-batch deposit: served once (the deposit the dead owner sent), deposited once, charged one price", async () => {
    a.client.close();
    a = await replica(shared);
    const chain = { url: devnet.chains.settlement?.rpcUrl ?? "", automine: true, blockTime: 0 };
    const reader = settlementReader(devnet);
    const escrow = devnet.chains.settlement?.contracts.batchSettlement as Address;
    const p = batchPayer(devnet, "payer3");
    const required = p.http.getPaymentRequiredResponse(headerGetter(await challenge(a.client, BLOCK_NUMBER)));
    const payload = await p.client.createPaymentPayload(required);
    expect((payload.payload as { type: string }).type).toBe("deposit");
    const deposited = BigInt((payload.payload as { deposit: { amount: string } }).deposit.amount);
    const credentials = Object.entries(p.http.encodePaymentSignatureHeader(payload)).map(([name, value]) => ({
      name,
      value,
    }));
    const escrowBefore = await usdcBalance(reader, devnet, escrow);
    const fromBlock = (await reader.getBlockNumber()) + 1n;
    const { s, again, log } = await killOwnerMidSettlement(chain, credentials);
    expect(s.settled, s.reason).toBe(true);
    expect(log).toContain("took over a settlement whose replica died running it");
    // One deposit transaction reached the escrow (a second would be sent, and revert, without the fix).
    const sentToEscrow: string[] = [];
    for (let n = fromBlock; n <= (await reader.getBlockNumber()); n++) {
      const block = await reader.getBlock({ blockNumber: n, includeTransactions: true });
      for (const tx of block.transactions)
        if (tx.to && isAddressEqual(tx.to, escrow)) sentToEscrow.push(tx.hash);
    }
    expect(sentToEscrow).toHaveLength(1);
    expect(await usdcBalance(reader, devnet, escrow)).toBe(escrowBefore + deposited);
    // The channel charged the price once, as the receipt says.
    const receipt = (headers: Header[]) =>
      JSON.parse(Buffer.from(headers[0]?.value ?? "", "base64").toString()) as {
        transaction: string;
        extra: { channelState: { chargedCumulativeAmount: string }; chargedAmount: string };
      };
    expect(receipt(s.headers).transaction).toBe(sentToEscrow[0]);
    expect(receipt(s.headers).extra.channelState.chargedCumulativeAmount).toBe(String(priceOf(BLOCK_NUMBER)));
    const redis = createRedis({ url: "redis://127.0.0.1:6379" });
    await redis.connect();
    try {
      // payment-verifier writes under <REDIS_PREFIX>payment:; the SDK's channel records under channels:.
      const [key, ...others] = (await redis.keys(`${prefix}payment:channels::server:channel:*`)).filter(
        (k) => !k.endsWith(":lock"),
      );
      expect(others).toEqual([]);
      const channel = JSON.parse((await redis.get(key ?? "")) ?? "{}");
      expect(channel.chargedCumulativeAmount).toBe(String(priceOf(BLOCK_NUMBER)));
      expect(channel.balance).toBe(String(deposited));
      expect(channel.pendingRequest).toBeUndefined();
    } finally {
      await redis.close();
    }
    expect(again.settled, again.reason).toBe(true);
    expect(again.headers).toEqual(s.headers);
  });

  // As the MPP session case above: the owner's settlement completes, then the reservation is put
  // back as an owner would leave it had it died after the deposit was recorded and charged.
  it("x402-batch deposit recorded and charged by an owner that died before its answer: answered settled from the record, charged once", async () => {
    const p = batchPayer(devnet, "payer5");
    const required = p.http.getPaymentRequiredResponse(headerGetter(await challenge(b.client, BLOCK_NUMBER)));
    const payload = await p.client.createPaymentPayload(required);
    expect((payload.payload as { type: string }).type).toBe("deposit");
    const credentials = Object.entries(p.http.encodePaymentSignatureHeader(payload)).map(([name, value]) => ({
      name,
      value,
    }));
    const charged = (headers: Header[]) =>
      (
        JSON.parse(Buffer.from(headers[0]?.value ?? "", "base64").toString()) as {
          extra: { channelState: { chargedCumulativeAmount: string } };
        }
      ).extra.channelState.chargedCumulativeAmount;
    const { first, again } = await settledByOwnerThatDied(credentials);
    expect(charged(first.headers)).toBe(String(priceOf(BLOCK_NUMBER)));
    // The same charge: the channel charged the price once.
    expect(charged(again.headers)).toBe(String(priceOf(BLOCK_NUMBER)));
  });
});
