// mppx pieces for tests on the devnet's Tempo chain: the Redis store mppx needs (atomic), viem
// clients for chain 4217, a fetch that records the credentials an mppx client sends, and payers
// using the unmodified official mppx client. Shared by tests, the benchmark and the example, so it
// must not depend on vitest.
import type { DevnetFile } from "@tollgate/devnet";
import type { Redis as ServiceRedis } from "@tollgate/platform";
import { Mppx as MppxClient, tempo as tempoPayer } from "mppx/client";
import { createClient as createRedis } from "redis";
import { type Account, createClient, erc20Abi, type Hex, http, isAddressEqual, type Transport } from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { getBlock, readContract } from "viem/actions";
import { tempo } from "viem/tempo/chains";
import { redisAtomicStore } from "../../libs/payment-rails/src/mppx-store.ts";

const newRedis = () => createRedis({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" });
type Redis = ReturnType<typeof newRedis>;

/** A node-redis client for the shared test Redis (connect it, and close it when done). */
export function redisClient(): Redis {
  return newRedis();
}
/** mppx's store in Redis under `keyPrefix`, atomic: payment-verifier's own (libs/payment-rails/src/mppx-store.ts). */
export function mppxRedisStore(redis: Redis, keyPrefix: string) {
  return redisAtomicStore(redis as unknown as ServiceRedis, keyPrefix);
}

export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  for await (const keys of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
    if (keys.length > 0) await redis.del(keys);
  }
}

/** viem client for the devnet's Tempo chain (4217) with the Tempo serializers. */
export function tempoClient(url: string, account?: Account) {
  const transport: Transport = http(url, { retryCount: 0 });
  return createClient({ chain: tempo, transport, ...(account ? { account } : {}) });
}

export function tempoChain(devnet: Pick<DevnetFile, "chains">) {
  const chain = devnet.chains.tempo;
  if (!chain?.anvilRpcUrl) throw new Error("the devnet has no tempo chain");
  return { ...chain, anvilRpcUrl: chain.anvilRpcUrl };
}

export async function tip20Balance(url: string, token: `0x${string}`, owner: `0x${string}`): Promise<bigint> {
  return readContract(tempoClient(url), {
    address: token,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [owner],
  });
}

/**
 * A fetch for mppx clients that keeps every `Authorization: Payment …` it sends, and how long each
 * of those requests took (sent → response headers).
 */
export function recordingFetch(): { fetch: typeof globalThis.fetch; sent: string[]; ms: number[] } {
  const sent: string[] = [];
  const ms: number[] = [];
  const recording: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    const authorization = request.headers.get("authorization");
    if (!authorization?.startsWith("Payment ")) return fetch(request);
    sent.push(authorization);
    const started = performance.now();
    const res = await fetch(request);
    ms.push(performance.now() - started);
    return res;
  };
  return { fetch: recording, sent, ms };
}

/** A 402 as the official mppx client reads it, from the headers payment-verifier's Challenge gave. */
export function paymentRequiredResponse(headers: readonly { name: string; value: string }[]): Response {
  return new Response(null, {
    status: 402,
    headers: headers.map((h) => [h.name, h.value] as [string, string]),
  });
}

/** A devnet account as a viem account (the devnet's keys are public test keys). */
export function devnetAccount(devnet: Pick<DevnetFile, "accounts">, role: string): PrivateKeyAccount {
  const found = devnet.accounts.find((a) => a.role === role);
  if (!found) throw new Error(`the devnet has no account "${role}"`);
  return privateKeyToAccount(found.privateKey);
}

/**
 * The official mppx client paying `charge` from `role` in `currency` (the 402 offers two: the
 * client keeps the one asked for), signing a transaction (`pull`) or broadcasting itself (`push`).
 */
export function mppChargePayer(
  devnet: Pick<DevnetFile, "accounts" | "chains">,
  role: string,
  currency: `0x${string}`,
  mode: "pull" | "push" = "pull",
) {
  const account = devnetAccount(devnet, role);
  const rpc = tempoChain(devnet).anvilRpcUrl;
  const recorder = recordingFetch();
  const client = MppxClient.create({
    polyfill: false,
    fetch: recorder.fetch,
    methods: [tempoPayer.charge({ account, mode, getClient: () => tempoClient(rpc) })],
    orderChallenges: (candidates) =>
      candidates.filter((c) => isAddressEqual(c.challenge.request.currency as `0x${string}`, currency)),
  });
  return { account, client, fetch: client.fetch, sent: recorder.sent, ms: recorder.ms };
}

/** The official mppx session manager for `role` (deposits up to `maxDeposit` USDC.e). */
export function mppSessionPayer(
  devnet: Pick<DevnetFile, "accounts" | "chains">,
  role: string,
  maxDeposit = "1",
) {
  const account = devnetAccount(devnet, role);
  const rpc = tempoChain(devnet).anvilRpcUrl;
  const recorder = recordingFetch();
  const manager = tempoPayer.session.manager({
    account,
    fetch: recorder.fetch,
    getClient: () => tempoClient(rpc),
    maxDeposit,
  });
  return { account, manager, sent: recorder.sent, ms: recorder.ms };
}

/** Transactions mined on the chain at `url` in blocks (from, to] whose sender is `who`. */
export async function transactionsFrom(
  url: string,
  who: `0x${string}`,
  from: bigint,
  to: bigint,
): Promise<Hex[]> {
  const hashes: Hex[] = [];
  for (let n = from + 1n; n <= to; n++) {
    const block = await getBlock(tempoClient(url), { blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) if (isAddressEqual(tx.from, who)) hashes.push(tx.hash);
  }
  return hashes;
}
