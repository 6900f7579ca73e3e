// Attacks on payment-verifier found in the security review (issue 18), each performed for real:
// payloads signed by the official x402 client (then tampered with), the devnet's settlement chain,
// the official facilitator served over its HTTP API where the test must count what reaches it.
import { createServer } from "node:http";
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import { type CallError, grpc } from "@tollgate/platform";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { createWalletClient, http, type PublicClient, parseAbi, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PaymentVerifierConfig, X402Config } from "../../services/payment-verifier/src/config.ts";
import {
  BLOCK_NUMBER,
  CALL,
  cleanUp,
  devnetConfig,
  facilitatorHandler,
  type Header,
  headerGetter,
  listen,
  pay,
  payer,
  priceOf,
  settle,
  settlementReader,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  usdcBalance,
  verify,
} from "./support.ts";

let devnet: Devnet;
let chain: PublicClient;
const prefixes: string[] = [];
const outboxDirs: string[] = [];
const namespace = uniqueId("pvsec");
const cleanups: Array<() => Promise<unknown> | unknown> = [];

function cfg(overrides: Partial<PaymentVerifierConfig> = {}, x402: Partial<X402Config> = {}) {
  const c = devnetConfig(devnet, overrides, x402);
  prefixes.push(c.redisPrefix);
  outboxDirs.push(c.outboxDir);
  return c;
}

async function start(config: PaymentVerifierConfig) {
  const v = await startVerifier(config, { eventsNamespace: namespace });
  cleanups.push(async () => {
    v.client.close();
    await v.handle.stop();
  });
  return v;
}

/** The official facilitator over HTTP, counting what reaches it. */
async function countingFacilitator(role = "spare4") {
  const calls: string[] = [];
  const server = createServer(facilitatorHandler(devnet, calls, role));
  const { port, close } = await listen(server);
  cleanups.push(close);
  return { calls, url: `http://127.0.0.1:${port}` };
}

const rpc = (method: string, params: unknown[] = []) =>
  fetch(devnet.chains.settlement?.rpcUrl ?? "", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  }).then((r) => r.json());

/** Re-encodes a PAYMENT-SIGNATURE after `edit` changed its decoded payload. */
function tampered(
  credentials: Header[],
  edit: (payload: { payload: Record<string, unknown> }) => void,
): Header[] {
  return credentials.map((h) => {
    const payload = JSON.parse(Buffer.from(h.value, "base64").toString());
    edit(payload);
    return { name: h.name, value: Buffer.from(JSON.stringify(payload)).toString("base64") };
  });
}

beforeAll(async () => {
  devnet = await startSettlementDevnet();
  chain = settlementReader(devnet);
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await devnet?.stop();
  if (devnet) outboxDirs.push(dirname(devnet.file));
  await cleanUp({ redisPrefixes: prefixes, namespace, outboxDirs });
});

describe("forged payments never reach the facilitator (finding 4)", () => {
  it("refuses a copied offer with a garbage signature locally, every time, at no facilitator cost", async () => {
    const facilitator = await countingFacilitator();
    const { client } = await start(
      cfg(
        { schemes: ["exact"] },
        { facilitator: { mode: "remote", url: facilitator.url, timeoutMs: 5_000 } },
      ),
    );
    const { credentials } = await pay(client, payer(devnet, "payer1"), CALL);
    const before = facilitator.calls.length;
    for (let i = 0; i < 10; i++) {
      // A fresh garbage signature each time: nothing to remember, the local check alone refuses it.
      const forged = tampered(credentials, (p) => {
        (p.payload as { signature: string }).signature = toHex(crypto.getRandomValues(new Uint8Array(65)));
      });
      const v = await verify(client, CALL, forged);
      expect(v).toMatchObject({ valid: false, errorCode: "payment_invalid" });
      expect(v.reason).toBe("the signature does not match the authorization (invalid_exact_evm_signature)");
    }
    expect(facilitator.calls.slice(before)).toEqual([]);
    // The genuine payment still goes through the facilitator as usual.
    expect((await verify(client, CALL, credentials)).valid).toBe(true);
    expect(facilitator.calls.slice(before)).toEqual(["POST /verify"]);
  });

  it("asks the facilitator once about a signature only a smart wallet could make, then remembers its refusal", async () => {
    const facilitator = await countingFacilitator();
    const { client } = await start(
      cfg(
        { schemes: ["exact"] },
        { facilitator: { mode: "remote", url: facilitator.url, timeoutMs: 5_000 } },
      ),
    );
    const { credentials } = await pay(client, payer(devnet, "payer2"), CALL);
    // `from` is a contract (the token itself): a recovery cannot refuse it, the facilitator must.
    const contractPayer = tampered(credentials, (p) => {
      (p.payload as { authorization: { from: string } }).authorization.from =
        devnet.demo.settlement.usdc.address;
    });
    const before = facilitator.calls.length;
    for (let i = 0; i < 5; i++) {
      const v = await verify(client, CALL, contractPayer);
      expect(v).toMatchObject({ valid: false, errorCode: "payment_invalid" });
      expect(v.reason).toMatch(/signature/);
    }
    expect(facilitator.calls.slice(before)).toEqual(["POST /verify"]);
  });

  it("limits payment attempts per client address with rate_limited (the gateway answers 429)", async () => {
    const { client } = await start(
      cfg({
        limits: {
          perClient: { perSecond: 1, burst: 3 },
          perPayer: { perSecond: 50, burst: 100 },
          refusalMemorySeconds: 30,
        },
      }),
    );
    const { credentials } = await pay(client, payer(devnet, "payer3"), CALL);
    const attempt = (ip: string) =>
      client.call("Verify", {
        requestId: uniqueId("req-"),
        resource: { endpoint: CALL, network: "ethereum", url: "" },
        credentials: tampered(credentials, (p) => {
          (p.payload as { signature: string }).signature = toHex(crypto.getRandomValues(new Uint8Array(65)));
        }),
        client: ip,
      });
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await attempt("198.51.100.7"));
    expect(answers.map((a) => a.errorCode)).toEqual([
      "payment_invalid",
      "payment_invalid",
      "payment_invalid",
      "rate_limited",
      "rate_limited",
    ]);
    // The enum the gateway reads, beside the deprecated string older gateways read.
    expect(answers.map((a) => a.error)).toEqual([
      "PAYMENT_ERROR_PAYMENT_INVALID",
      "PAYMENT_ERROR_PAYMENT_INVALID",
      "PAYMENT_ERROR_PAYMENT_INVALID",
      "PAYMENT_ERROR_RATE_LIMITED",
      "PAYMENT_ERROR_RATE_LIMITED",
    ]);
    expect((await attempt("198.51.100.8")).errorCode).toBe("payment_invalid");
  });
});

describe("internal calls without the mesh's ids are refused (finding 5)", () => {
  it("refuses Verify, Settle and Release without a request id or payment id, and changes nothing", async () => {
    const { client } = await start(cfg());
    const { credentials } = await pay(client, payer(devnet, "payer4"), BLOCK_NUMBER);
    const v = await verify(client, BLOCK_NUMBER, credentials);
    expect(v.valid).toBe(true);
    const resource = { endpoint: BLOCK_NUMBER, network: "ethereum", url: "" };
    const calls = [
      client.call("Verify", { requestId: "", resource, credentials }),
      client.call("Settle", { requestId: "", paymentId: v.paymentId, resource, credentials }),
      client.call("Settle", { requestId: v.requestId, paymentId: "", resource, credentials }),
      client.call("Release", { requestId: "", paymentId: v.paymentId, reason: "x" }),
      client.call("Release", { requestId: v.requestId, paymentId: "", reason: "x" }),
    ];
    for (const result of await Promise.allSettled(calls)) {
      expect(result.status).toBe("rejected");
      const failure = ((result as PromiseRejectedResult).reason as CallError).failure;
      expect(failure.grpcCode).toBe(grpc.status.INVALID_ARGUMENT);
    }
    // Still held by its own request, which settles it normally.
    const s = await settle(client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId);
    expect(s.settled, s.reason).toBe(true);
  });
});

describe("one settlement key in two replicas (finding 6)", () => {
  it("settles concurrent payments on both replicas without a nonce race: every call served is paid", async () => {
    const shared = cfg();
    const a = await start(shared);
    const b = await start({ ...shared, outboxDir: cfg().outboxDir });
    const payTo = devnet.demo.settlement.payTo;
    const before = await usdcBalance(chain, devnet, payTo);
    const count = 16;
    const paid = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        pay(a.client, payer(devnet, `payer${(i % 8) + 1}`), BLOCK_NUMBER),
      ),
    );
    const replicas = paid.map((_, i) => (i % 2 ? b.client : a.client));
    const verified = await Promise.all(
      paid.map((p, i) => verify(replicas[i] ?? a.client, BLOCK_NUMBER, p.credentials)),
    );
    expect(verified.every((v) => v.valid)).toBe(true);
    const settled = await Promise.all(
      verified.map((v, i) =>
        settle(replicas[i] ?? a.client, BLOCK_NUMBER, paid[i]?.credentials ?? [], v.paymentId, v.requestId),
      ),
    );
    expect(settled.map((s) => s.reason)).toEqual(settled.map(() => ""));
    expect(settled.every((s) => s.settled)).toBe(true);
    const nonces = (
      await Promise.all(settled.map((s) => chain.getTransaction({ hash: s.transaction as `0x${string}` })))
    )
      .map((t) => t.nonce)
      .sort((x, y) => x - y);
    expect(new Set(nonces).size).toBe(count);
    expect((nonces.at(-1) ?? 0) - (nonces[0] ?? 0)).toBe(count - 1);
    expect((await usdcBalance(chain, devnet, payTo)) - before).toBe(BigInt(count) * priceOf(BLOCK_NUMBER));
  });
});

describe("the signer lock keeps a key's nonce per chain", () => {
  it("settles on a restarted devnet (same chain id, new genesis) although Redis still holds the old chain's nonce", async () => {
    const config = cfg();
    const first = await start(config);
    for (const role of ["payer7", "payer8"]) {
      const { credentials } = await pay(first.client, payer(devnet, role), BLOCK_NUMBER);
      const v = await verify(first.client, BLOCK_NUMBER, credentials);
      expect((await settle(first.client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId)).settled).toBe(
        true,
      );
    }
    const restarted = await startSettlementDevnet();
    cleanups.push(() => restarted.stop());
    const second = await start(devnetConfig(restarted, { redisPrefix: config.redisPrefix }));
    const { credentials } = await pay(second.client, payer(restarted, "payer1"), BLOCK_NUMBER);
    const v = await verify(second.client, BLOCK_NUMBER, credentials);
    expect(v.valid, v.reason).toBe(true);
    const s = await settle(second.client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId);
    expect(s.settled, s.reason).toBe(true);
  });
});

describe("a settlement that lands after its answer was lost (finding 9)", () => {
  it("answers 503 while the transfer is unconfirmed, then serves the payer's retry once it landed, collecting nothing twice", async () => {
    const { client } = await start(
      cfg(
        {},
        {
          facilitator: {
            ...(devnetConfig(devnet).x402.facilitator as Extract<
              X402Config["facilitator"],
              { mode: "local" }
            >),
            confirmationTimeoutMs: 400,
          },
        },
      ),
    );
    const p = payer(devnet, "payer5");
    const payTo = devnet.demo.settlement.payTo;
    const before = await Promise.all([
      usdcBalance(chain, devnet, payTo),
      usdcBalance(chain, devnet, p.address),
    ]);
    const { credentials } = await pay(client, p, CALL);
    const first = await verify(client, CALL, credentials);
    expect(first.valid).toBe(true);

    await rpc("evm_setAutomine", [false]);
    let pending: Awaited<ReturnType<typeof settle>>;
    try {
      pending = await settle(client, CALL, credentials, first.paymentId, first.requestId);
      expect(pending).toMatchObject({
        settled: false,
        errorCode: "service_unavailable",
        error: "PAYMENT_ERROR_SERVICE_UNAVAILABLE",
      });
      expect(pending.reason).toMatch(/not confirmed in time.*retry the same request with the same payment/);
      expect(pending.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      await rpc("evm_mine");
    } finally {
      await rpc("evm_setAutomine", [true]);
    }
    expect((await chain.getTransactionReceipt({ hash: pending.transaction as `0x${string}` })).status).toBe(
      "success",
    );

    // The client retries with the same payment: served, recorded as settled by that transaction.
    const retry = await verify(client, CALL, credentials);
    expect(retry.valid, retry.reason).toBe(true);
    const s = await settle(client, CALL, credentials, retry.paymentId, retry.requestId);
    expect(s).toMatchObject({ settled: true, transaction: pending.transaction });
    expect(decodePaymentResponseHeader(headerGetter(s.headers)("PAYMENT-RESPONSE") ?? "")).toMatchObject({
      success: true,
      transaction: pending.transaction,
    });
    // Served once: a third attempt is a replay.
    expect((await verify(client, CALL, credentials)).reason).toMatch(/already used/);
    const after = await Promise.all([
      usdcBalance(chain, devnet, payTo),
      usdcBalance(chain, devnet, p.address),
    ]);
    expect((after[0] ?? 0n) - (before[0] ?? 0n)).toBe(priceOf(CALL));
    expect((before[1] ?? 0n) - (after[1] ?? 0n)).toBe(priceOf(CALL));
  });

  it("refuses an authorization the payer canceled on chain: marked used, but nothing was paid", async () => {
    const { client } = await start(cfg());
    const role = "payer6";
    const key = devnet.accounts.find((a) => a.role === role)?.privateKey ?? "0x";
    const { credentials, payload } = await pay(client, payer(devnet, role), CALL);
    const { from, nonce } = (
      payload.payload as { authorization: { from: `0x${string}`; nonce: `0x${string}` } }
    ).authorization;
    const usdc = devnet.demo.settlement.usdc;
    const wallet = createWalletClient({
      account: privateKeyToAccount(key),
      transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
    });
    const signature = await wallet.signTypedData({
      domain: {
        name: usdc.domain.name,
        version: usdc.domain.version,
        chainId: devnet.demo.settlement.chainId,
        verifyingContract: usdc.address,
      },
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: from, nonce },
    });
    const hash = await wallet.writeContract({
      address: usdc.address,
      abi: parseAbi(["function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)"]),
      functionName: "cancelAuthorization",
      args: [from, nonce, signature],
      chain: null,
    });
    expect((await chain.waitForTransactionReceipt({ hash })).status).toBe("success");

    const v = await verify(client, CALL, credentials);
    expect(v).toMatchObject({ valid: false, errorCode: "payment_invalid" });
    expect(v.reason).toMatch(/canceled this payment authorization on chain/);
  });
});
