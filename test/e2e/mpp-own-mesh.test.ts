// MPP when a call gets no answer, sessions settled on schedule by the settlement worker, and a
// payment-verifier restart, through a mesh of its own (every service its own process): ethereum is
// served by the shared devnet, every sepolia upstream is dead, so a sepolia call gets no answer.
// Paid with the unmodified official mppx client on the shared devnet's Tempo chain. Stand-ins: the
// channel reserve (a contract of ours for the TIP-1034 precompile) and the devnet's RPC shim that
// payment-verifier reaches the chain through.
import { readFileSync } from "node:fs";
import { priceAtomic } from "@tollgate/catalog";
import { createLedgerClient } from "@tollgate/cli/clients/settlement-admin";
import { readDevnetFile } from "@tollgate/devnet";
import { freePort, type Mesh } from "@tollgate/local";
import { Credential, Receipt } from "mppx";
import { Mppx as MppxClient, tempo as tempoPayer } from "mppx/client";
import { createClient as createRedisClient } from "redis";
import { encodeFunctionData, type Hex, parseEventLogs } from "viem";
import {
  getTransactionReceipt,
  readContract,
  sendRawTransaction,
  waitForTransactionReceipt,
} from "viem/actions";
import { Abis, Transaction } from "viem/tempo";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { redisMppxState } from "../../libs/payment-rails/src/mppx-store.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually, sleep, until } from "../support/eventually.ts";
import { paymentReleases } from "../support/gateway.ts";
import {
  devnetAccount,
  mppChargePayer,
  mppSessionPayer,
  tempoChain,
  tempoClient,
  tip20Balance,
} from "../support/mppx.ts";
import { startOwnMesh } from "../support/own-mesh.ts";

const shared = inject("mesh");
const devnet = readDevnetFile(shared.devnetFile);
const tempo = tempoChain(devnet);
const { payTo: PAY_TO } = devnet.demo.tempo;
const PATH_USD = devnet.demo.tempo.pathUsd.address;
const USDC_E = devnet.demo.tempo.usdce.address;
const balance = (token: `0x${string}`, owner: `0x${string}`) => tip20Balance(tempo.anvilRpcUrl, token, owner);
const price = priceAtomic("0.001");
let mesh: Mesh;

const paymentEnv = sharedSettlementEnv("spare3");

beforeAll(async () => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace: `mppnoanswer${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum?.rpcUrl ?? "",
      UPSTREAMS_SEPOLIA: dead,
    },
    serviceEnv: {
      gateway: { EXECUTE_DEADLINE_MS: "3000" },
      // Its own keys on the shared devnet's chains (x402 settlement, Tempo channel operator).
      "payment-verifier": paymentEnv,
      // The worker settles session channels with the same operator key, as soon as 0.003 USDC.e
      // is unsettled, looking every second.
      "settlement-worker": {
        MPP_TEMPO_RPC_URL: paymentEnv.MPP_TEMPO_RPC_URL ?? "",
        MPP_CHAIN_ID: paymentEnv.MPP_CHAIN_ID ?? "",
        MPP_SERVER_PRIVATE_KEY: paymentEnv.MPP_SERVER_PRIVATE_KEY ?? "",
        MPP_FEE_TOKEN: paymentEnv.MPP_FEE_TOKEN ?? "",
        MPP_SESSION_SETTLE_MIN_AMOUNT: "0.003",
        MPP_SESSION_SETTLE_TICK_SECONDS: "1",
      },
    },
  });
});

afterAll(async () => {
  await mesh?.stop();
});

const at = (path: string, authorization?: string) =>
  fetch(`${mesh.gatewayUrl}${path}`, authorization ? { headers: { authorization } } : {});

/** The same credential again, once the gateway has released it after its failed call. */
async function retry(path: string, authorization: string): Promise<Response> {
  const attempt = async () => {
    const res = await at(path, authorization);
    if (res.status !== 402) return { res, inUse: false };
    const body = (await res.clone().json()) as { error: { message: string } };
    return { res, inUse: /in use/.test(body.error.message) };
  };
  return (await eventually(attempt, (a) => !a.inUse, 30_000, 100)).res;
}

describe("an MPP call that gets no answer costs nothing (the charging rule) — stand-ins: the devnet's RPC shim, and for sessions the channel reserve contract of ours for the TIP-1034 precompile", () => {
  it("charge, transaction payload: nothing is broadcast; the same credential then buys its call", async () => {
    const payer = mppChargePayer(devnet, "payer1", PATH_USD, "pull");
    const before = await balance(PATH_USD, PAY_TO);
    const dead = await payer.fetch(`${mesh.gatewayUrl}/api/chain/chain-id?network=sepolia`);
    expect(dead.status).toBe(503);
    expect(((await dead.json()) as { error: { code: string } }).error.code).toBe("upstream_unavailable");
    expect(dead.headers.get("payment-receipt")).toBeNull();
    expect(await balance(PATH_USD, PAY_TO)).toBe(before);

    const served = await retry("/api/chain/chain-id", payer.sent.at(-1) ?? "");
    expect(served.status, await served.clone().text()).toBe(200);
    expect(Receipt.fromResponse(served).status).toBe("success");
    expect(await balance(PATH_USD, PAY_TO)).toBe(before + price);
  });

  it("charge, transaction payload already sent and waiting in the mempool when its credential comes again: the call is served with that transfer, charging once", async () => {
    const payer = mppChargePayer(devnet, "payer5", PATH_USD, "pull");
    const before = await balance(PATH_USD, PAY_TO);
    const dead = await payer.fetch(`${mesh.gatewayUrl}/api/chain/chain-id?network=sepolia`);
    expect(dead.status).toBe(503);
    const credential = payer.sent.at(-1) ?? "";
    // The client's transaction sent by someone else (as a replica that died mid-settlement would
    // have); the chain has not mined it yet.
    const signed = (Credential.deserialize(credential).payload as { signature: Hex }).signature;
    const chain = tempoClient(tempo.anvilRpcUrl);
    await chain.request({ method: "evm_setAutomine", params: [false] } as never);
    let hash: Hex;
    let served: Response;
    try {
      hash = await sendRawTransaction(chain, {
        serializedTransaction: await Transaction.serialize(Transaction.deserialize(signed)),
      });
      // The same credential again while the transfer waits in the mempool; the chain mines it a
      // moment later.
      const retried = retry("/api/chain/chain-id", credential);
      // time-based: the transfer is held in the mempool a while, so the credential comes again while
      // it waits there (the case under test); mining it is the condition the retry then waits for.
      await sleep(1_000);
      await chain.request({ method: "evm_mine", params: [] } as never);
      served = await retried;
    } finally {
      await chain.request({ method: "evm_setAutomine", params: [true] } as never);
    }
    expect((await waitForTransactionReceipt(chain, { hash })).status).toBe("success");
    // Served with that transfer, not refused 402 (the client would pay a second time for one call).
    expect(served.status, await served.clone().text()).toBe(200);
    expect(Receipt.fromResponse(served).reference).toBe(hash);
    expect(await balance(PATH_USD, PAY_TO)).toBe(before + price);
    expect((await at("/api/chain/chain-id", credential)).status).toBe(402); // used now
  });

  it("charge, hash payload: the client's own transfer landed, so the credential stays good for a retry, served without paying again", async () => {
    const payer = mppChargePayer(devnet, "payer2", USDC_E, "push");
    const before = await balance(USDC_E, PAY_TO);
    const dead = await payer.fetch(`${mesh.gatewayUrl}/api/chain/chain-id?network=sepolia`);
    expect(dead.status).toBe(503);
    expect(dead.headers.get("payment-receipt")).toBeNull();
    expect(await balance(USDC_E, PAY_TO)).toBe(before + price); // moved by the client itself

    const credential = payer.sent.at(-1) ?? "";
    const served = await retry("/api/chain/chain-id", credential);
    expect(served.status, await served.clone().text()).toBe(200);
    expect(Receipt.fromResponse(served).reference).toBe(
      (Credential.deserialize(credential).payload as { hash: string }).hash,
    );
    expect(await balance(USDC_E, PAY_TO)).toBe(before + price);
    expect((await at("/api/chain/chain-id", credential)).status).toBe(402); // used now
  });

  it("session: a voucher whose call got no answer charges nothing; close settles only the served calls", async () => {
    const { manager } = mppSessionPayer(devnet, "payer3", "0.05");
    const payToBefore = await balance(USDC_E, PAY_TO);
    const first = await manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
    expect(first.status).toBe(200);
    const released = await paymentReleases(mesh);
    const dead = await manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id?network=sepolia`);
    expect(dead.status).toBe(503);
    expect(dead.receipt).toBeNull();
    // The gateway releases the session's voucher after answering.
    await until("the dead call's voucher was released", async () => (await paymentReleases(mesh)) > released);
    const second = await manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
    expect(second.status).toBe(200);
    expect(second.receipt).toMatchObject({ spent: String(2n * price), units: 2 });
    const closed = await manager.close();
    const { logs } = await getTransactionReceipt(tempoClient(tempo.anvilRpcUrl), {
      hash: closed?.txHash as Hex,
    });
    const [event] = parseEventLogs({ abi: Abis.tip20ChannelReserve, logs, eventName: "ChannelClosed" });
    expect(event?.args.settledToPayee).toBe(2n * price);
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore + 2n * price);
  });
});

describe("a payment-verifier restart mid-session — channel reserve: a contract of ours for the TIP-1034 precompile, reached through the devnet's RPC shim", () => {
  it("loses nothing: the channel is in Redis, the same secret checks the challenges, close settles every call", async () => {
    const { manager } = mppSessionPayer(devnet, "payer4", "0.05");
    const payToBefore = await balance(USDC_E, PAY_TO);
    for (let i = 1; i <= 5; i++) {
      const res = await manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
      expect(res.receipt).toMatchObject({ spent: String(BigInt(i) * price) });
    }
    // A 402 issued before the restart: its challenges are still honoured after it.
    const issuedBefore = await at("/api/chain/chain-id");
    await mesh.restart("payment-verifier");
    await eventually(
      async () => (await at("/api/chain/chain-id")).headers.get("www-authenticate"),
      (challenge) => !!challenge,
      30_000,
      100,
    );
    for (let i = 6; i <= 10; i++) {
      const res = await manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
      expect(res.status).toBe(200);
      expect(res.receipt).toMatchObject({ spent: String(BigInt(i) * price), units: i });
    }
    const closed = await manager.close();
    expect(closed).toMatchObject({ spent: String(10n * price) });
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore + 10n * price);

    const charge = mppChargePayer(devnet, "payer5", PATH_USD);
    const credential = await charge.client.createCredential(issuedBefore);
    expect((await at("/api/chain/chain-id", credential)).status).toBe(200);
  });
});

/** What the channel reserve has settled of a session channel, on chain. */
async function settledOnChain(channelId: string | undefined): Promise<bigint> {
  const state = await readContract(tempoClient(tempo.anvilRpcUrl), {
    address: devnet.demo.tempo.channelReserve.address,
    abi: Abis.tip20ChannelReserve,
    functionName: "getChannelState",
    args: [channelId as Hex],
  });
  return state.settled;
}

describe("scheduled settles of sessions — by the settlement worker, in one place; channel reserve: a contract of ours for the TIP-1034 precompile", () => {
  it("settles a channel once 0.003 USDC.e is unsettled, before any close, and records it in the ledger as channel_settled", async () => {
    const { manager } = mppSessionPayer(devnet, "payer5", "0.05");
    const payToBefore = await balance(USDC_E, PAY_TO);
    let channelId: string | undefined;
    for (let i = 0; i < 3; i++) {
      const res = await manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
      expect(res.status).toBe(200);
      channelId = res.receipt?.channelId;
    }
    const settled = () => settledOnChain(channelId);
    expect(await eventually(settled, 3n * price, 30_000, 100)).toBe(3n * price);
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore + 3n * price);

    const ledger = createLedgerClient(
      `127.0.0.1:${mesh.ports["settlement-worker"].main}`,
      readFileSync(mesh.operatorTokenFile, "utf8").trim(),
    );
    try {
      const entries = await eventually(
        async () => (await ledger.list({ channel: channelId ?? "", limit: 100 })).settlements,
        (listed) => listed.some((e) => e.outcome === "channel_settled"),
        30_000,
        100,
      );
      const schedule = entries.filter((e) => e.outcome === "channel_settled");
      expect(schedule).toHaveLength(1);
      expect(schedule[0]).toMatchObject({ amount: String(3n * price), channel: channelId });
      expect(schedule[0]?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      expect(entries.filter((e) => e.outcome === "accrued")).toHaveLength(3);
    } finally {
      ledger.close();
    }
    // Close captures only what the schedule had not settled: nothing more here.
    const closed = await manager.close();
    expect(closed).toMatchObject({ spent: String(3n * price) });
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore + 3n * price);
  });

  it("settles only what was spent when the channel holds a voucher above it (the state a Redis outage left in the chaos run, written into Redis by this test)", async () => {
    const { manager, sent } = mppSessionPayer(devnet, "payer6", "0.05");
    const payToBefore = await balance(USDC_E, PAY_TO);
    const call = (network = "ethereum") =>
      manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id?network=${network}`);
    let channelId = "";
    for (let served = 1; served <= 2; served++) {
      const res = await call();
      expect(res.receipt).toMatchObject({ spent: String(BigInt(served) * price) });
      channelId = (res.receipt?.channelId ?? "").toLowerCase();
    }
    // A voucher the payer really signed for a third call, which got no answer (nothing charged).
    expect((await call("sepolia")).status).toBe(503);
    const unserved = Credential.deserialize(sent.at(-1) ?? "").payload as {
      action: string;
      cumulativeAmount: string;
      signature: Hex;
    };
    expect(unserved).toMatchObject({ action: "voucher", cumulativeAmount: String(3n * price) });
    // The channel holds it as its highest voucher, while what was spent stays two calls' worth.
    const redis = createRedisClient({ url: "redis://127.0.0.1:6379" });
    await redis.connect();
    try {
      const channels = redisMppxState(redis as never, `mppnoanswer${process.pid}:payment:mpp:`).channels;
      await channels.update(channelId, (current: unknown) => {
        const c = current as { spent: bigint; highestVoucher: { channelId: string } };
        expect(c.spent).toBe(2n * price);
        const highestVoucher = {
          ...c.highestVoucher,
          cumulativeAmount: 3n * price,
          signature: unserved.signature,
        };
        return { op: "set", value: { ...c, highestVoucher, highestVoucherAmount: 3n * price }, result: null };
      });
    } finally {
      await redis.close();
    }
    const settled = () => settledOnChain(channelId);
    // The highest voucher is due (0.003 USDC.e) but a price above what was spent: the worker (a
    // pass every second) leaves it; what was spent (0.002) is not due yet.
    // time-based: proves the worker does NOT settle it: three of its passes go by.
    await sleep(3_000);
    expect(await settled()).toBe(0n);
    // The next call spends from that voucher; now it is within what was spent, and due.
    const third = await call();
    expect(third.receipt).toMatchObject({ spent: String(3n * price) });
    expect(await eventually(settled, 3n * price, 30_000, 100)).toBe(3n * price);
    const closed = await manager.close();
    expect(closed).toMatchObject({ spent: String(3n * price) });
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore + 3n * price);
  });

  it("a payer that signed ahead of its calls and asks the reserve to close is settled by the lowest voucher it signed above what it spent, not let go with its served calls unpaid (the payer's requestClose sent as it by anvil impersonation)", async () => {
    const account = devnetAccount(devnet, "payer7");
    const mpp = MppxClient.create({
      polyfill: false,
      methods: [
        tempoPayer.session({ account, getClient: () => tempoClient(tempo.anvilRpcUrl), maxDeposit: "0.05" }),
      ],
      orderChallenges: (candidates) => candidates.filter((c) => c.challenge.intent === "session"),
    });
    const path = "/api/chain/chain-id";
    const payToBefore = await balance(USDC_E, PAY_TO);
    // Opens with a voucher for its first call, then skips two prices: every later voucher adds one
    // price, so the highest stays two prices above what was spent, and no voucher it signs is ever
    // exactly what it spent (the last one within is its first).
    const opened = await mpp.createCredential(await at(path));
    expect((await at(path, opened)).status).toBe(200);
    const { channelId, descriptor } = Credential.deserialize(opened).payload as {
      channelId: Hex;
      descriptor: Record<string, unknown>;
    };
    for (const [signed, spent] of [
      [4n, 2n],
      [5n, 3n],
    ] as const) {
      const credential = await mpp.createCredential(await at(path), {
        action: "voucher",
        channelId,
        descriptor,
        cumulativeAmountRaw: String(signed * price),
      } as never);
      const res = await at(path, credential);
      expect(res.status).toBe(200);
      expect(Receipt.deserialize(res.headers.get("payment-receipt") ?? "")).toMatchObject({
        spent: String(spent * price),
      });
    }
    const settled = () => settledOnChain(channelId);
    // Staying, it is not settled beyond what it spent (0.003 due at 0.003; the voucher within what
    // it spent is 0.001).
    // time-based: proves the worker does NOT settle it: two of its passes (one a second) go by.
    await sleep(2_000);
    expect(await settled()).toBe(0n);
    // It asks the reserve to close, to withdraw its deposit once the grace period ends.
    const rpc = async (method: string, params: unknown[]) => {
      const res = await fetch(tempo.anvilRpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      const body = (await res.json()) as { result?: unknown; error?: { message: string } };
      if (body.error) throw new Error(`${method}: ${body.error.message}`);
      return body.result;
    };
    await rpc("anvil_impersonateAccount", [account.address]);
    await rpc("anvil_setBalance", [account.address, "0x56bc75e2d63100000"]);
    const hash = (await rpc("eth_sendTransaction", [
      {
        from: account.address,
        to: devnet.demo.tempo.channelReserve.address,
        data: encodeFunctionData({
          abi: Abis.tip20ChannelReserve,
          functionName: "requestClose",
          args: [descriptor as never],
        }),
      },
    ])) as Hex;
    await rpc("anvil_stopImpersonatingAccount", [account.address]);
    expect((await waitForTransactionReceipt(tempoClient(tempo.anvilRpcUrl), { hash })).status).toBe(
      "success",
    );
    // The worker settles the lowest voucher it signed above what it spent (0.004, not its highest,
    // 0.005): the three served calls are paid, and one price it signed ahead; the voucher within
    // what it spent would have paid one call.
    expect(await eventually(settled, 4n * price, 30_000, 100)).toBe(4n * price);
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore + 4n * price);
  });
});
