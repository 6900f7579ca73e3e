// x402 `exact` through the gateway, paid with the official client libraries: paying at every price,
// replays, 50 concurrent payers, charged reverts, bad input and short balances, and every settlement
// of this file found once in JetStream. The 402 offers and payments refused at Verify are in
// x402-offers.test.ts; the helpers in x402.support.ts.
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ENDPOINTS, priceAtomic } from "@tollgate/catalog";
import {
  ensureStreams,
  natsSubject,
  SETTLEMENT_V2,
  type SettlementEventV2,
  streamSpecFor,
} from "@tollgate/events";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { createWalletClient, defineChain, erc20Abi, http, pad, toFunctionSelector, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lower } from "../support/addresses.ts";
import { eventually } from "../support/eventually.ts";
import { get, mesh, metricSum, post } from "../support/gateway.ts";
import { x402Payer } from "../support/x402.ts";
import {
  atomic,
  balance,
  balances,
  chain,
  demo,
  devnet,
  endpoint,
  ethereum,
  expectRefused,
  expectSettled,
  NETWORK,
  PAY_TO,
  payFor,
  role,
  settledHere,
  settlement,
  signPayment,
  thirdNetwork,
  USDC,
} from "./x402.support.ts";

const releasedHere = new Set<string>();
let nc: NatsConnection;
let firstSeq = 1;
let stream = "";
let subject = "";

/**
 * The events namespace the mesh's services publish under (each test mesh isolates its streams).
 * MeshInfo does not carry it; deploy/local keeps each service's outbox in outbox/<namespace>/.
 */

beforeAll(async () => {
  // The mesh lane runs its files in one worker (isolate: false), where x402.support.ts may outlive a
  // file: the JetStream check counts this file's settlements only.
  settledHere.clear();
  const namespace = mesh.eventsNamespace;
  stream = streamSpecFor(SETTLEMENT_V2, namespace).name;
  subject = natsSubject(SETTLEMENT_V2, namespace);
  nc = await connect({ servers: "nats://127.0.0.1:4222" });
  const jsm = await jetstreamManager(nc);
  await ensureStreams(jsm, { namespace, subjects: [SETTLEMENT_V2] });
  firstSeq = (await jsm.streams.info(stream)).state.last_seq + 1;
});

afterAll(async () => {
  await nc?.close();
});

describe("x402 exact through the gateway, paid with the official client libraries", () => {
  it("pays once per call at every price, gets the right data, and payTo rises by exactly the price", async () => {
    const payer = x402Payer(devnet, "payer1");
    const A = role("A");
    const B = role("B");
    const cases: { id: string; path: string; body?: unknown; data: (d: Record<string, unknown>) => void }[] =
      [
        {
          id: "blockNumber",
          path: "/api/chain/block-number",
          data: (d) => {
            expect(d.network).toBe("ethereum");
            expect(BigInt(d.block_number as string)).toBeGreaterThanOrEqual(BigInt(demo.seededBlock));
          },
        },
        {
          id: "erc20Balance",
          path: `/api/chain/erc20-balance?address=${A}&contract=${demo.erc20.address}`,
          data: (d) =>
            expect(d).toEqual(
              lower({
                account: A,
                balance: demo.erc20.balances[A],
                decimals: 18,
                symbol: "DEMO",
                token: demo.erc20.address,
              }),
            ),
        },
        {
          id: "estimateGas",
          path: "/api/chain/estimate-gas",
          body: {
            from: demo.estimateGas.from,
            to: demo.estimateGas.to,
            value: toHex(BigInt(demo.estimateGas.value)),
          },
          data: (d) => expect(d).toEqual({ gas_estimate: "0x5208" }),
        },
        {
          id: "call",
          path: "/api/chain/call",
          body: { to: demo.reverter.address, data: toFunctionSelector("ok()") },
          data: (d) => expect(d).toEqual({ result: pad(toHex(42)) }),
        },
        {
          id: "erc721Tokens",
          path: `/api/chain/erc721-tokens?contract=${demo.erc721.address}&address=${B}`,
          data: (d) =>
            expect(d).toEqual(
              lower({
                contract: demo.erc721.address,
                owner: B,
                count: 3,
                balance: "3",
                tokens: ["6", "7", "8"],
              }),
            ),
        },
        {
          id: "balance",
          path: `/api/chain/balance/${B}?network=ethereum`,
          data: (d) => {
            expect(String(d.account).toLowerCase()).toBe(B.toLowerCase());
            expect(d).toMatchObject({ decimals: 18, symbol: "ETH" });
            expect(d.balance).toMatch(/^[0-9]+$/);
          },
        },
        {
          id: "networkInfo",
          path: `/api/chain/network-info?network=${thirdNetwork}`,
          data: (d) => {
            expect(d).toMatchObject({ chain_id: "0x1237", network: thirdNetwork });
            expect(d.block_number).toMatch(/^0x[0-9a-f]+$/);
            expect(d.gas_price).toMatch(/^0x[0-9a-f]+$/);
          },
        },
      ];
    // One endpoint of each distinct price in the catalog.
    expect(new Set(cases.map((c) => endpoint(c.id).price))).toEqual(new Set(ENDPOINTS.map((e) => e.price)));

    const head = await ethereum.getBlockNumber();
    for (const c of cases) {
      const before = await balances(payer.address);
      const res = await payFor(payer, c.path, c.body);
      await expectSettled(res, payer, c.id);
      c.data(res.body.data ?? {});
      if (c.id === "blockNumber") expect(BigInt(res.body.data?.block_number as string)).toBe(head);
      const after = await balances(payer.address);
      expect(after.payTo - before.payTo, c.id).toBe(atomic(c.id));
      expect(before.payer - after.payer, c.id).toBe(atomic(c.id));
    }
    // Exactly one payment went on the wire per call (the 402 round trip carries none).
    expect(payer.paid).toHaveLength(cases.length);
  });

  it("refuses a replayed PAYMENT-SIGNATURE with a 402 naming why, and moves no money", async () => {
    const payer = x402Payer(devnet, "payer2");
    const path = `/api/chain/erc20-balance?address=${role("C")}&contract=${demo.erc20.address}`;
    const first = await payFor(payer, path);
    const tx = await expectSettled(first, payer, "erc20Balance");
    const sent = payer.paid[0]?.signature;
    expect(sent).toBeTruthy();

    const before = await balances(payer.address);
    const replay = await get(path, { "PAYMENT-SIGNATURE": sent ?? "" });
    expectRefused(replay, /already used/);
    expect(replay.body.error.message).toContain(tx);
    // The legacy header name carries the same payment: refused the same way.
    const legacy = await get(path, { "X-PAYMENT": sent ?? "" });
    expectRefused(legacy, /already used/);
    // And at another endpoint of the same price.
    const elsewhere = await get(
      `/api/chain/erc20-balance?address=${role("D")}&contract=${demo.erc20.address}`,
      {
        "PAYMENT-SIGNATURE": sent ?? "",
      },
    );
    expectRefused(elsewhere, /already used/);
    expect(await balances(payer.address)).toEqual(before);
  });

  it("settles 50 concurrent paid calls from five payers, each exactly once", async () => {
    const payers = ["payer3", "payer4", "payer5", "payer6", "payer7"].map((r) => x402Payer(devnet, r));
    const perPayer = 10;
    const price = atomic("blockNumber");
    const before = await Promise.all([PAY_TO, ...payers.map((p) => p.address)].map(balance));

    const results = await Promise.all(
      payers.flatMap((p) =>
        Array.from({ length: perPayer }, async () => ({
          payer: p,
          res: await payFor(p, "/api/chain/block-number"),
        })),
      ),
    );
    const txs = new Set<string>();
    for (const { payer, res } of results) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
      expect(receipt).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
      expect(res.body.meta.cost_usdc).toBe("0.001");
      txs.add(receipt.transaction);
      settledHere.set(res.body.meta.request_id, receipt.transaction);
    }
    expect(txs.size).toBe(50);
    expect(new Set(results.map((r) => r.res.body.meta.request_id)).size).toBe(50);

    const after = await Promise.all([PAY_TO, ...payers.map((p) => p.address)].map(balance));
    expect((after[0] ?? 0n) - (before[0] ?? 0n)).toBe(50n * price);
    payers.forEach((p, i) => {
      expect((before[i + 1] ?? 0n) - (after[i + 1] ?? 0n), p.role).toBe(BigInt(perPayer) * price);
      expect(p.paid, p.role).toHaveLength(perPayer);
    });
    // Every settlement is its own successful transfer on chain.
    const receipts = await Promise.all(
      [...txs].map((hash) => chain.getTransactionReceipt({ hash: hash as `0x${string}` })),
    );
    expect(receipts.every((r) => r.status === "success")).toBe(true);
  });

  it("charges a revert and a not-found from the node like data: receipt, cost in meta, and the payment is spent", async () => {
    const payer = x402Payer(devnet, "payer8");
    const before = await balances(payer.address);

    const reverted = await payFor(payer, "/api/chain/call", {
      to: demo.reverter.address,
      data: toFunctionSelector("alwaysReverts()"),
    });
    expect(reverted.status, JSON.stringify(reverted.body)).toBe(422);
    expect(reverted.body.error?.code).toBe("execution_reverted");
    expect(reverted.body.error?.message).toContain(demo.reverter.reason);

    const missing = await payFor(payer, "/api/chain/block/0xffffffff");
    expect(missing.status, JSON.stringify(missing.body)).toBe(404);
    expect(missing.body.error?.code).toBe("block_not_found");

    for (const [res, id] of [
      [reverted, "call"],
      [missing, "block"],
    ] as const) {
      expect(res.body.data).toBeNull();
      expect(res.body.meta).toMatchObject({
        cost_usdc: endpoint(id).price,
        payment_chain: NETWORK,
        payment_token: USDC,
      });
      const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
      expect(receipt).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
      settledHere.set(res.body.meta.request_id, receipt.transaction);
    }
    expect(payer.paid.map((p) => p.status)).toEqual([422, 404]);
    const after = await balances(payer.address);
    expect(after.payTo - before.payTo).toBe(atomic("call") + atomic("block"));
    expect(before.payer - after.payer).toBe(atomic("call") + atomic("block"));

    // A revert is no free read: the same signature does not buy the call again.
    const signature = payer.paid[0]?.signature ?? "";
    const again = await post(
      "/api/chain/call",
      { to: demo.reverter.address, data: toFunctionSelector("alwaysReverts()") },
      { "PAYMENT-SIGNATURE": signature },
    );
    expectRefused(again, /already used/);
    expect(again.body.error).not.toHaveProperty("revert_data");
    expect(await balances(payer.address)).toEqual(after);
  });

  it("refuses bad input with 400 before any payment is verified, and the payment stays unspent", async () => {
    const payer = x402Payer(devnet, "payer8");
    const good = `/api/chain/erc20-balance?address=${role("A")}&contract=${demo.erc20.address}`;
    const signature = await signPayment(payer, good);
    const verifies = () =>
      metricSum("payment-verifier", "grpc_server_handling_seconds_count", { grpc_method: "Verify" });
    const verifiesBefore = await verifies();
    const before = await balances(payer.address);

    const bad = await get(`/api/chain/erc20-balance?address=not-an-address&contract=${demo.erc20.address}`, {
      "PAYMENT-SIGNATURE": signature,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter", parameter: "address" });
    expect(bad.headers["payment-response"]).toBeUndefined();
    const badBody = await post("/api/chain/call", { to: "0x1234" }, { "PAYMENT-SIGNATURE": signature });
    expect(badBody.status).toBe(400);
    expect(await verifies()).toBe(verifiesBefore);
    expect(await balances(payer.address)).toEqual(before);

    // Not reserved, not spent: it still pays for the call it was signed for.
    const res = await get(good, { "PAYMENT-SIGNATURE": signature });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    settledHere.set(
      res.body.meta.request_id,
      decodePaymentResponseHeader(String(res.headers["payment-response"])).transaction,
    );
    expect(await verifies()).toBe(verifiesBefore + 1);
  });

  it("answers 402 without data to payments a balance cannot cover, sending only the transfer it covers", async () => {
    // spare1 holds exactly one call's price; four payments signed at once each look covered alone,
    // but the payer's draws in flight are held within its balance: one is served, the others are
    // refused at Verify (before any node call or transfer), so no settlement reverts.
    const payer = x402Payer(devnet, "spare1");
    const funder = devnet.accounts.find((a) => a.role === "payer8");
    if (!funder) throw new Error("no payer8");
    const price = atomic("blockNumber");
    const wallet = createWalletClient({
      account: privateKeyToAccount(funder.privateKey),
      chain: defineChain({
        id: settlement.chainId,
        name: "settlement",
        nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
        rpcUrls: { default: { http: [devnet.chains.settlement?.rpcUrl ?? ""] } },
      }),
      transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
    });
    const funding = await wallet.writeContract({
      address: USDC,
      abi: erc20Abi,
      functionName: "transfer",
      args: [payer.address, price - (await balance(payer.address))],
    });
    expect((await chain.waitForTransactionReceipt({ hash: funding })).status).toBe("success");
    const before = await balances(payer.address);
    expect(before.payer).toBe(price);

    const path = "/api/chain/block-number";
    const signatures = await Promise.all(Array.from({ length: 4 }, () => signPayment(payer, path)));
    const results = await Promise.all(signatures.map((s) => get(path, { "PAYMENT-SIGNATURE": s })));

    const served = results.filter((r) => r.status === 200);
    expect(served, JSON.stringify(results.map((r) => r.body))).toHaveLength(1);
    const settledTx = decodePaymentResponseHeader(String(served[0]?.headers["payment-response"])).transaction;
    settledHere.set(String(served[0]?.body.meta.request_id), settledTx);
    const refused = results.filter((r) => r.status !== 200);
    for (const res of refused) {
      expect(res.status, JSON.stringify(res.body)).toBe(402);
      expect(res.body).toMatchObject({ data: null, error: { code: "payment_invalid" } });
      expect(res.body.meta.cost_usdc).toBeUndefined();
    }
    // Refused at Verify, saying why: no settlement ran for them (no x402 settlement receipt).
    for (const res of refused) {
      expect(res.body.error.message).toMatch(
        /the payer's balance \(\d+ atomic units\) does not cover this payment|the payer's token balance is too low/,
      );
      expect(res.headers["payment-response"]).toBeUndefined();
    }

    const after = await balances(payer.address);
    expect(after.payer).toBe(0n);
    expect(after.payTo - before.payTo).toBe(price);
  });

  it("records every settlement of this run exactly once in JetStream (tollgate.settlement.v2, the mesh's namespace)", async () => {
    expect(settledHere.size).toBeGreaterThanOrEqual(6 + 1 + 50 + 2);
    const wanted = (events: SettlementEventV2[]) =>
      [...settledHere.keys()].every((id) =>
        events.some((e) => e.request_id === id && e.outcome === "settled"),
      ) &&
      [...releasedHere].every((id) => events.some((e) => e.request_id === id && e.outcome === "released"));
    const events = await eventually(() => readSettlements(firstSeq), wanted, 30_000, 200);
    const ours = events.filter((e) => {
      const id = e.request_id ?? "";
      return settledHere.has(id) || releasedHere.has(id);
    });

    for (const [requestId, tx] of settledHere) {
      const settledEvents = ours.filter((e) => e.request_id === requestId && e.outcome === "settled");
      expect(settledEvents, requestId).toHaveLength(1);
      expect(settledEvents[0]).toMatchObject({
        transaction: tx,
        scheme: "exact",
        asset: USDC,
        payment_network: NETWORK,
        reason: null,
      });
      const ep = ENDPOINTS.find((e) => e.path === settledEvents[0]?.endpoint);
      expect(settledEvents[0]?.amount).toBe(priceAtomic(ep?.price ?? "", 6).toString());
    }
    for (const requestId of releasedHere) {
      const released = ours.filter((e) => e.request_id === requestId);
      expect(
        released.map((e) => e.outcome),
        requestId,
      ).toEqual(["released"]);
      expect(released[0]?.transaction).toBeNull();
    }
    // One transaction per settled event: nothing was settled twice under another request id.
    const txs = ours.filter((e) => e.outcome === "settled").map((e) => e.transaction);
    expect(new Set(txs).size).toBe(txs.length);
    expect(txs).toHaveLength(settledHere.size);
  });
});

/** The settlement events stored from stream sequence `from` on, read with an ordered consumer. */
async function readSettlements(from: number): Promise<SettlementEventV2[]> {
  const jsm = await jetstreamManager(nc);
  const last = (await jsm.streams.info(stream)).state.last_seq;
  if (last < from) return [];
  const consumer = await jetstream(nc).consumers.get(stream, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: from,
  });
  const events: SettlementEventV2[] = [];
  try {
    for (;;) {
      const msg = await consumer.next({ expires: 2_000 });
      if (!msg) break;
      events.push(msg.json<SettlementEventV2>());
      if (msg.seq >= last) break;
    }
  } finally {
    await consumer.delete().catch(() => {});
  }
  return events;
}
