// Attacks that make Tollgate spend (issue 34), performed from outside against a mesh of this file's
// own: fresh wallets signing with the official x402 client, the shared devnet's real settlement
// chain, real Redis and NATS. payment-verifier settles with a facilitator key of its own (spare1), so
// every transaction it sends is counted by that key's nonce; ethereum is served through a counting
// proxy, so every node call an attack starts is counted at the node. The gateway trusts one proxy
// hop (TRUST_PROXY=1): X-Forwarded-For names the client.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { priceAtomic } from "@tollgate/catalog";
import type { DevnetFile } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { type Network, x402Client, x402HTTPClient } from "@x402/fetch";
import {
  createPublicClient,
  createWalletClient,
  erc20Abi,
  type Hex,
  http,
  parseAbi,
  parseSignature,
} from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { metric } from "../quota-meter/helpers.ts";
import { CountingProxy } from "../support/counting-proxy.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { sleep, until } from "../support/eventually.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { type Address, settlementClient, usdcBalance } from "../support/x402.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8")) as DevnetFile;
const chain = settlementClient(devnet);
const network = devnet.demo.settlement.network as Network;
const usdc = devnet.demo.settlement.usdc.address;
const PAY_TO = devnet.demo.settlement.payTo;
const settlementRpc = devnet.chains.settlement?.rpcUrl ?? "";
const account = (role: string) =>
  privateKeyToAccount(devnet.accounts.find((a) => a.role === role)?.privateKey ?? "0x");
const FACILITATOR = account("spare1").address;
const BLOCK_NUMBER = "/api/chain/block-number";
/**
 * Hostile attempts of each kind: the default keeps the suite short; HOSTILE_ATTEMPTS=1000 is the
 * measurement the README's security section quotes (printed per kind at the end).
 */
const attempts = (usual: number) => Number(process.env.HOSTILE_ATTEMPTS) || usual;
const figures: string[] = [];

let mesh: Mesh;
let node: CountingProxy;

beforeAll(async () => {
  node = await new CountingProxy(devnet.chains.ethereum?.rpcUrl ?? "").listen();
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `money${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: node.url("/"),
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia?.rpcUrl ?? "",
    },
    serviceEnv: {
      gateway: { TRUST_PROXY: "1" },
      "payment-verifier": sharedSettlementEnv("spare1"),
    },
  });
}, 180_000);

afterAll(async () => {
  process.stderr.write(`${figures.map((f) => `hostile ${f}`).join("\n")}\n`);
  await mesh?.stop();
  await node?.close();
});

/** A client address of its own for each attack (attempt limits are per client). */
const clientIp = () => `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;

/** Sent transactions of the mesh's facilitator key: its nonce. */
const facilitatorSent = () => chain.getTransactionCount({ address: FACILITATOR });

/** Node calls of `method` that reached the ethereum node so far. */
const nodeCalls = (method: string) => node.requests.filter((r) => r.methods.includes(method)).length;

async function get(path: string, headers: Record<string, string>) {
  const res = await fetch(`${mesh.gatewayUrl}${path}`, { headers });
  const body = (await res.json()) as { error: { code: string; message: string } | null };
  return { status: res.status, headers: res.headers, body };
}

/** A fresh wallet holding exactly `usdcAtomic` of the settlement token (and `eth` wei for gas). */
async function freshWallet(usdcAtomic: bigint, eth = 0n): Promise<PrivateKeyAccount> {
  const wallet = privateKeyToAccount(generatePrivateKey());
  const funder = createWalletClient({ account: account("payer8"), transport: http(settlementRpc) });
  const hash = await funder.writeContract({
    address: usdc,
    abi: erc20Abi,
    functionName: "transfer",
    args: [wallet.address, usdcAtomic],
    chain: null,
  });
  await chain.waitForTransactionReceipt({ hash });
  if (eth > 0n)
    await chain.request({
      method: "anvil_setBalance" as never,
      params: [wallet.address, `0x${eth.toString(16)}`] as never,
    });
  return wallet;
}

/** The official client's x402 HTTP helper for `signer` paying with `scheme` on the settlement chain. */
function httpClient(scheme: ExactEvmScheme | BatchSettlementEvmScheme): x402HTTPClient {
  const client = new x402Client()
    .setSpendControls({ allowedAssets: [{ network, asset: usdc }] })
    .register(network, scheme);
  return new x402HTTPClient(client);
}

/** The 402's offers for `path`, read as the official client reads them. */
async function offer(client: x402HTTPClient, path: string) {
  const challenge = await fetch(`${mesh.gatewayUrl}${path}`);
  expect(challenge.status).toBe(402);
  return client.getPaymentRequiredResponse((name) => challenge.headers.get(name) ?? undefined);
}

/** PAYMENT-SIGNATURE headers for `path`, one per payload (each with a nonce of its own). */
async function signatures(client: x402HTTPClient, path: string, n: number): Promise<string[]> {
  const required = await offer(client, path);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const payload = await client.createPaymentPayload(required);
    out.push(client.encodePaymentSignatureHeader(payload)["PAYMENT-SIGNATURE"] ?? "");
  }
  return out;
}

describe("one price in a wallet pays for one settlement, however many payments it signs (finding 1)", () => {
  it("20 exact payments sent at once from a wallet holding one price: one served, 19 refused before any node call, one transaction sent", async () => {
    // A path whose node call nothing else makes (rpc-proxy polls eth_blockNumber for the head).
    const path = `/api/chain/balance/${PAY_TO}`;
    const price = priceAtomic("0.002");
    const rounds = Math.ceil(attempts(20) / 20);
    const sent = await facilitatorSent();
    const calls = nodeCalls("eth_getBalance");
    for (let round = 0; round < rounds; round++) {
      const wallet = await freshWallet(price);
      const client = httpClient(new ExactEvmScheme(wallet));
      const signed = await signatures(client, path, 20);
      const ip = clientIp();
      const payTo = await usdcBalance(chain, devnet, PAY_TO as Address);
      const answers = await Promise.all(
        signed.map((s) => get(path, { "PAYMENT-SIGNATURE": s, "X-Forwarded-For": ip })),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses, JSON.stringify(answers.map((a) => a.body.error?.message))).toEqual([
        200,
        ...Array(19).fill(402),
      ]);
      for (const a of answers.filter((x) => x.status === 402))
        expect(a.body.error?.code).toBe("payment_invalid");
      // The one transaction sent paid: none reverted for want of balance.
      expect((await usdcBalance(chain, devnet, PAY_TO as Address)) - payTo).toBe(price);
      expect(await usdcBalance(chain, devnet, wallet.address)).toBe(0n);
    }
    expect(nodeCalls("eth_getBalance") - calls).toBe(rounds);
    // time-based: a window for a transaction that must NOT be sent (one per round only): nothing to wait for.
    await sleep(500);
    expect((await facilitatorSent()) - sent).toBe(rounds);
    const metrics = mesh.ports["payment-verifier"].metrics;
    expect(await metric(metrics, "payment_settlements_reverted_total")).toBe(0);
    expect(await metric(metrics, "payment_overdrawn_total", { scheme: "exact" })).toBeGreaterThanOrEqual(
      19 * rounds,
    );
    figures.push(
      `exact from one-price wallets: ${rounds * 20} attempts, ${rounds} served, ${(await facilitatorSent()) - sent} transactions sent, 0 reverted, ${nodeCalls("eth_getBalance") - calls} node calls`,
    );
  });

  it("5 x402-batch deposits on channels of their own, sent at once from a wallet holding one deposit: one served, 4 refused before any node call, one deposit sent", async () => {
    const path = `/api/chain/balance/${PAY_TO}`;
    // The deposit the official client makes for this endpoint, learned from a first payload.
    const probe = new BatchSettlementEvmScheme(
      toClientEvmSigner(privateKeyToAccount(generatePrivateKey()), chain as never),
    );
    const required = await offer(httpClient(probe), path);
    const first = await httpClient(probe).createPaymentPayload(required);
    const deposit = BigInt((first.payload as { deposit: { amount: string } }).deposit.amount);
    const reader = createPublicClient({ transport: http(settlementRpc) });
    const rounds = Math.ceil(attempts(5) / 5);
    const sent = await facilitatorSent();
    const calls = nodeCalls("eth_getBalance");
    for (let round = 0; round < rounds; round++) {
      const wallet = await freshWallet(deposit);
      const signed: string[] = [];
      for (let i = 0; i < 5; i++) {
        // A salt of its own per client: five channels, each opened by a deposit of the whole balance.
        const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(wallet, reader), {
          salt: `0x${randomBytes(32).toString("hex")}`,
        });
        const client = httpClient(scheme);
        const payload = await client.createPaymentPayload(await offer(client, path));
        signed.push(client.encodePaymentSignatureHeader(payload)["PAYMENT-SIGNATURE"] ?? "");
      }
      const ip = clientIp();
      const answers = await Promise.all(
        signed.map((s) => get(path, { "PAYMENT-SIGNATURE": s, "X-Forwarded-For": ip })),
      );
      expect(
        answers.map((a) => a.status).sort(),
        JSON.stringify(answers.map((a) => a.body.error?.message)),
      ).toEqual([200, 402, 402, 402, 402]);
      expect(await usdcBalance(chain, devnet, wallet.address)).toBe(0n);
    }
    expect(nodeCalls("eth_getBalance") - calls).toBe(rounds);
    // time-based: a window for a transaction that must NOT be sent (one per round only): nothing to wait for.
    await sleep(500);
    expect((await facilitatorSent()) - sent).toBe(rounds);
    expect(await metric(mesh.ports["payment-verifier"].metrics, "payment_settlements_reverted_total")).toBe(
      0,
    );
    figures.push(
      `x402-batch deposits from one-deposit wallets: ${rounds * 5} attempts, ${rounds} served, ${(await facilitatorSent()) - sent} transactions sent, 0 reverted, ${nodeCalls("eth_getBalance") - calls} node calls`,
    );
  });
});

describe("an authorization its payer cancels after Verify is never sent (finding 1)", () => {
  it("is refused at Settle without a transaction, and the payer's next payments are refused for a while", async () => {
    const path = `/api/chain/balance/${PAY_TO}`;
    const wallet = await freshWallet(priceAtomic("0.010"), 10n ** 18n);
    const client = httpClient(new ExactEvmScheme(wallet));
    const [signature, ...later] = await signatures(client, path, Math.max(2, attempts(2)));
    const decoded = JSON.parse(Buffer.from(signature ?? "", "base64").toString()) as {
      payload: { authorization: { nonce: Hex } };
    };
    const ip = clientIp();
    const sent = await facilitatorSent();
    // The node holds the call, so the cancellation lands between Verify and Settle.
    node.holdOnly = ["eth_getBalance"];
    node.mode = "hold";
    const mark = node.requests.length;
    const answer = get(path, { "PAYMENT-SIGNATURE": signature ?? "", "X-Forwarded-For": ip });
    await until(
      "the call reached the node",
      () => node.requests.slice(mark).some((r) => r.methods.includes("eth_getBalance")),
      30_000,
      20,
    );
    const cancel = await wallet.signTypedData({
      domain: {
        name: devnet.demo.settlement.usdc.domain.name,
        version: devnet.demo.settlement.usdc.domain.version,
        chainId: Number(network.split(":")[1]),
        verifyingContract: usdc,
      },
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: wallet.address, nonce: decoded.payload.authorization.nonce },
    });
    const { v, r, s } = parseSignature(cancel);
    const canceled = await createWalletClient({
      account: wallet,
      transport: http(settlementRpc),
    }).writeContract({
      address: usdc,
      abi: parseAbi(["function cancelAuthorization(address,bytes32,uint8,bytes32,bytes32)"]),
      functionName: "cancelAuthorization",
      args: [wallet.address, decoded.payload.authorization.nonce, Number(v), r, s],
      chain: null,
    });
    await chain.waitForTransactionReceipt({ hash: canceled });
    node.release();
    const refused = await answer;
    expect(refused.status).toBe(402);
    expect(refused.body.error?.message).toMatch(/canceled/);
    expect(await facilitatorSent()).toBe(sent);
    // Refused like a drain: its next payments (other nonces, funds still there) are refused at Verify.
    for (let i = 0; i < later.length; i += 25) {
      const next = await Promise.all(
        later
          .slice(i, i + 25)
          .map((sig) => get(path, { "PAYMENT-SIGNATURE": sig, "X-Forwarded-For": clientIp() })),
      );
      for (const n of next) {
        expect(n.status).toBe(402);
        expect(n.body.error?.message).toMatch(/payments from this payer are refused until/);
      }
    }
    expect(await facilitatorSent()).toBe(sent);
    figures.push(
      `canceled authorization: 1 canceled between Verify and Settle, then ${later.length} more payments from that payer: ${(await facilitatorSent()) - sent} transactions sent`,
    );
  });
});

describe("forged payments cannot lock a payer out (finding 4)", () => {
  it("after 300 forged payments naming a victim from many addresses, the victim's own payment is served", async () => {
    const victim = await freshWallet(priceAtomic("0.010"));
    const attacker = privateKeyToAccount(generatePrivateKey());
    // The attacker's key signs, the victim is named as the payer: no signature of the victim's.
    const forger = httpClient(
      new ExactEvmScheme({
        address: victim.address,
        signTypedData: (m) => attacker.signTypedData(m as never),
      }),
    );
    const forged = await signatures(forger, BLOCK_NUMBER, attempts(300));
    const sent = await facilitatorSent();
    const answers = [];
    for (let i = 0; i < forged.length; i += 30) {
      answers.push(
        ...(await Promise.all(
          forged
            .slice(i, i + 30)
            .map((s) => get(BLOCK_NUMBER, { "PAYMENT-SIGNATURE": s, "X-Forwarded-For": clientIp() })),
        )),
      );
    }
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([402]));
    expect(await facilitatorSent()).toBe(sent);
    figures.push(`forged payments naming a victim: ${forged.length} attempts, 0 transactions sent`);
    const own = await signatures(httpClient(new ExactEvmScheme(victim)), BLOCK_NUMBER, 1);
    const served = await get(BLOCK_NUMBER, {
      "PAYMENT-SIGNATURE": own[0] ?? "",
      "X-Forwarded-For": clientIp(),
    });
    expect(served.status, served.body.error?.message).toBe(200);
  });

  it("credentials that do not decode are counted against their client: a flood is answered 429", async () => {
    const ip = clientIp();
    const answers: Awaited<ReturnType<typeof get>>[] = [];
    // Waves of 50 until the client's bucket (50 a second, a burst of 100) runs dry: how many that
    // takes depends on how fast this machine sends them, so the bound is generous, not the count.
    for (let i = 0; i < attempts(4_000) / 50 && !answers.some((a) => a.status === 429); i++) {
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            get(BLOCK_NUMBER, { "PAYMENT-SIGNATURE": `not-a-payment-${i}-${j}`, "X-Forwarded-For": ip }),
          ),
        )),
      );
    }
    const statuses = answers.map((a) => a.status);
    expect(statuses).toContain(429);
    expect(new Set(statuses)).toEqual(new Set([402, 429]));
    figures.push(
      `undecodable credentials from one client: ${answers.length} attempts, ${statuses.filter((x) => x === 429).length} answered 429, the rest 402`,
    );
    // Another client is not affected.
    const other = await get(BLOCK_NUMBER, {
      "PAYMENT-SIGNATURE": "still-not-one",
      "X-Forwarded-For": clientIp(),
    });
    expect(other.status).toBe(402);
  });
});

describe("exact authorizations within range (finding 6)", () => {
  it("refuses, naming the field, an authorization valid for a year and one whose validBefore passes uint256", async () => {
    const wallet = await freshWallet(priceAtomic("0.010"));
    const client = httpClient(new ExactEvmScheme(wallet));
    const required = await offer(client, BLOCK_NUMBER);
    const accepted = required.accepts[0];
    if (!accepted) throw new Error("no offer");
    // Signed for a year: the client signs validBefore = now + maxTimeoutSeconds.
    const long = await client.createPaymentPayload({
      ...required,
      accepts: [{ ...accepted, maxTimeoutSeconds: 365 * 86_400 }],
    });
    long.accepted = accepted;
    const year = await get(BLOCK_NUMBER, {
      "PAYMENT-SIGNATURE": client.encodePaymentSignatureHeader(long)["PAYMENT-SIGNATURE"] ?? "",
      "X-Forwarded-For": clientIp(),
    });
    expect(year.status).toBe(402);
    expect(year.body.error?.message).toMatch(/validBefore/);
    const huge = structuredClone(long);
    (huge.payload as { authorization: { validBefore: string } }).authorization.validBefore = (
      2n ** 256n
    ).toString();
    const past = await get(BLOCK_NUMBER, {
      "PAYMENT-SIGNATURE": client.encodePaymentSignatureHeader(huge)["PAYMENT-SIGNATURE"] ?? "",
      "X-Forwarded-For": clientIp(),
    });
    expect(past.status).toBe(402);
    expect(past.body.error?.message).toMatch(/validBefore.*2\^256/);
  });
});
