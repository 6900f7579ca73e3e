// rpc-proxy operations against the devnet's demo contracts, through the real gRPC
// interface. A counting proxy in front of each chain proves every operation costs exactly
// one upstream HTTP round trip (one call, one JSON-RPC batch or one Multicall3 eth_call).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { endpointById } from "@tollgate/catalog";
import { byRole, type ChainDemo, type Devnet, startDevnet } from "@tollgate/devnet";
import { grpc } from "@tollgate/platform";
import { encodeFunctionData, type Hex, parseAbi, toFunctionSelector, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lower } from "../support/addresses.ts";
import { CountingProxy, type Recorded, type Service, startService } from "./helpers.ts";

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";

let devnet: Devnet;
let demo: ChainDemo;
let svc: Service;
const proxies: Record<string, CountingProxy> = {};
const measured = new Map<string, string>();
let A: Hex;
let B: Hex;
let D: Hex;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "rpc-proxy-ops-"));
  devnet = await startDevnet({ stateDir: dir, file: join(dir, "devnet.json") });
  demo = devnet.demo.ethereum;
  A = byRole(devnet.accounts, "A");
  B = byRole(devnet.accounts, "B");
  D = byRole(devnet.accounts, "D");
  for (const name of ["ethereum", "sepolia", "tollnet"]) {
    proxies[name] = await new CountingProxy(devnet.chains[name]!.rpcUrl).listen();
  }
  svc = await startService({
    upstreams: Object.fromEntries(Object.entries(proxies).map(([name, p]) => [name, [p.url()]])),
    // Only the first head poll at start: afterwards every request the proxies see is an operation's.
    upstream: { headPollMs: 60_000 },
    logs: { maxBlockRange: 100, defaultBlockRange: 5 },
  });
});

afterAll(async () => {
  if (measured.size > 0) {
    const rows = [...measured].map(([op, methods]) => `  ${op.padEnd(22)} 1 round trip: ${methods}`);
    process.stdout.write(`rpc-proxy round trips measured at the counting proxy:\n${rows.join("\n")}\n`);
  }
  await svc?.stop();
  for (const p of Object.values(proxies)) await p.close();
  await devnet?.stop();
});

/** Every number a message names, hex or decimal. */
function numbersIn(message: string): bigint[] {
  return (message.match(/0x[0-9a-f]+|\d+/gi) ?? []).map((n) => BigInt(n));
}

/** Runs an operation; asserts one round trip (reported and seen) and the catalog's data schema. */
async function run(
  operation: string,
  params: Record<string, unknown>,
  network = "ethereum",
): Promise<{ data: Record<string, unknown>; sent: Recorded }> {
  const proxy = proxies[network]!;
  const mark = proxy.requests.length;
  const r = await svc.execute(operation, params, { network });
  const sent = proxy.since(mark);
  expect(r.roundTrips).toBe(1);
  expect(sent).toHaveLength(1);
  expect(endpointById(operation)!.data.safeParse(r.data).success).toBe(true);
  const variant = operation === "erc721Tokens" ? ` max=${params.max}` : "";
  measured.set(`${operation}${variant}`, sent[0]!.methods.join(" + "));
  return { data: r.data, sent: sent[0]! };
}

/** Runs an operation expected to fail; asserts at most one round trip was spent. */
async function failing(operation: string, params: Record<string, unknown>, network = "ethereum") {
  const proxy = proxies[network]!;
  const mark = proxy.requests.length;
  const failure = await svc.fail(operation, params, { network });
  expect(proxy.since(mark).length).toBeLessThanOrEqual(1);
  return { failure, sent: proxy.since(mark) };
}

const quantity = (n: bigint | number | string) => `0x${BigInt(n).toString(16)}`;

describe("rpc-proxy operations on the devnet", () => {
  it("blockNumber, chainId and networkInfo (one batch), on every network they serve", async () => {
    const head = await run("blockNumber", {});
    expect(head.data.network).toBe("ethereum");
    expect(BigInt(head.data.block_number as string)).toBeGreaterThanOrEqual(BigInt(demo.seededBlock));

    expect((await run("chainId", {})).data).toEqual({ chain_id: "0x1", network: "ethereum" });
    expect((await run("chainId", {}, "sepolia")).data).toEqual({ chain_id: "0xaa36a7", network: "sepolia" });

    const info = await run("networkInfo", {});
    expect(info.sent.methods).toEqual(["eth_chainId", "eth_blockNumber", "eth_gasPrice"]);
    expect(info.data).toMatchObject({
      chain_id: "0x1",
      block_number: head.data.block_number,
      network: "ethereum",
    });
    const third = await run("networkInfo", {}, "tollnet");
    expect(third.data).toMatchObject({ chain_id: "0x1237", network: "tollnet" });
  });

  it("refuses a network the operation does not serve, and unknown operations, without a round trip", async () => {
    const wrongNetwork = await failing("blockNumber", {}, "tollnet");
    expect(wrongNetwork.failure.grpcCode).toBe(grpc.status.INVALID_ARGUMENT);
    expect(wrongNetwork.failure.code).toBe("invalid_parameter");
    expect(wrongNetwork.failure.message).toMatch(/^network: /);
    expect(wrongNetwork.sent).toHaveLength(0);

    const unknown = await failing("getBalance", {});
    expect(unknown.failure).toMatchObject({
      grpcCode: grpc.status.INVALID_ARGUMENT,
      code: "invalid_parameter",
    });
    expect(unknown.failure.message).toMatch(/^operation: /);
  });

  it("block: header fields and transaction hashes; block_not_found past the head", async () => {
    const transfer = demo.erc20.transfers[1]!;
    const { data, sent } = await run("block", { number: quantity(transfer.blockNumber) });
    expect(sent.body).toMatchObject({
      method: "eth_getBlockByNumber",
      params: [quantity(transfer.blockNumber), false],
    });
    expect(data.number).toBe(quantity(transfer.blockNumber));
    expect(data.transactions).toContain(transfer.txHash);
    for (const field of ["gas_limit", "gas_used", "hash", "parent_hash", "timestamp"]) {
      expect(data[field]).toMatch(/^0x[0-9a-f]+$/);
    }
    const latest = await run("block", { number: "latest" });
    expect(Array.isArray(latest.data.transactions)).toBe(true);

    const missing = await failing("block", { number: "0xffffff" });
    expect(missing.failure).toMatchObject({ grpcCode: grpc.status.NOT_FOUND, code: "block_not_found" });
  });

  it("code: bytecode and size of a contract; empty for a wallet", async () => {
    const token = await run("code", { address: demo.erc20.address });
    expect(token.data.is_contract).toBe(true);
    expect(token.data.bytecode_size).toBe(((token.data.code as string).length - 2) / 2);
    expect(token.data.bytecode_size).toBeGreaterThan(100);
    const wallet = await run("code", { address: A });
    expect(wallet.data).toEqual(lower({ address: A, code: "0x", bytecode_size: 0, is_contract: false }));
  });

  it("contract: names and interfaces of the ERC-20, ERC-721 and ERC-1155 contracts in one Multicall3 call", async () => {
    const erc20 = await run("contract", { address: demo.erc20.address });
    expect(erc20.sent.body).toMatchObject({ method: "eth_call", params: [{ to: MULTICALL3 }, "latest"] });
    expect(erc20.data).toEqual(
      lower({
        address: demo.erc20.address,
        name: "Demo Dollar",
        symbol: "DEMO",
        decimals: 18,
        interfaces: ["ERC20"],
      }),
    );
    const erc721 = await run("contract", { address: demo.erc721.address });
    expect(erc721.data).toEqual(
      lower({
        address: demo.erc721.address,
        name: "Demo Tokens",
        symbol: "DNFT",
        decimals: null,
        interfaces: ["ERC721"],
      }),
    );
    const erc1155 = await run("contract", { address: demo.erc1155.address });
    expect(erc1155.data).toMatchObject({ decimals: null, interfaces: ["ERC1155"] });
    const wallet = await run("contract", { address: A });
    expect(wallet.data).toEqual(
      lower({ address: A, name: null, symbol: null, decimals: null, interfaces: [] }),
    );
  });

  it("allowance, erc20Balance and erc1155Balance match the seeded state", async () => {
    const grant = demo.erc20.allowances.find((a) => a.owner === A && a.spender === B)!;
    const allowance = await run("allowance", { contract: demo.erc20.address, owner: A, spender: B });
    expect(allowance.data).toEqual(
      lower({
        allowance: quantity(grant.amount),
        contract: demo.erc20.address,
        decimals: 18,
        owner: A,
        spender: B,
      }),
    );
    const none = await run("allowance", { contract: demo.erc20.address, owner: B, spender: D });
    expect(none.data.allowance).toBe("0x0");

    const balance = await run("erc20Balance", { contract: demo.erc20.address, address: A });
    expect(balance.sent.methods).toEqual(["eth_call"]);
    expect(balance.data).toEqual(
      lower({
        account: A,
        balance: demo.erc20.balances[A],
        decimals: 18,
        symbol: "DEMO",
        token: demo.erc20.address,
      }),
    );

    for (const [holder, ids] of Object.entries(demo.erc1155.balances)) {
      for (const [id, amount] of Object.entries(ids)) {
        const r = await run("erc1155Balance", {
          contract: demo.erc1155.address,
          address: holder,
          token_id: id,
        });
        expect(r.data).toEqual(
          lower({
            account: holder,
            balance: amount,
            contract: demo.erc1155.address,
            token_id: id,
          }),
        );
      }
    }
  });

  it("erc721Tokens: ids in tokenOfOwnerByIndex order, cut by max, and max=1000 in ONE round trip", async () => {
    const owned = demo.erc721.owners[A]!;
    const all = await run("erc721Tokens", { contract: demo.erc721.address, address: A, max: 50 });
    expect(all.data).toEqual(
      lower({
        contract: demo.erc721.address,
        owner: A,
        count: owned.length,
        balance: String(owned.length),
        tokens: owned,
      }),
    );
    const cut = await run("erc721Tokens", { contract: demo.erc721.address, address: A, max: 2 });
    expect(cut.data).toMatchObject({ count: 2, balance: String(owned.length), tokens: owned.slice(0, 2) });

    const big = await run("erc721Tokens", { contract: demo.erc721.address, address: B, max: 1000 });
    expect(big.sent.methods).toEqual(["eth_call"]);
    expect(big.data).toMatchObject({ count: 3, tokens: demo.erc721.owners[B] });

    const notEnumerable = await failing("erc721Tokens", { contract: demo.erc20.address, address: A, max: 5 });
    expect(notEnumerable.failure.code).toBe("execution_reverted");
    expect(notEnumerable.failure.message).toMatch(/ERC721Enumerable/);
  });

  it("ens: forward and reverse through the Universal Resolver, ens_name_not_found otherwise", async () => {
    for (const entry of demo.ens.names) {
      const forward = await run("ens", { input: entry.name });
      expect(forward.sent.methods).toEqual(["eth_call"]);
      expect(forward.data).toEqual(lower({ address: entry.address, input: entry.name, mode: "forward" }));
      const reverse = await run("ens", { input: entry.address });
      expect(reverse.data).toEqual(
        lower({
          address: entry.address,
          input: entry.address,
          mode: "reverse",
          name: entry.name,
        }),
      );
    }
    const unknownName = await failing("ens", { input: demo.ens.unknownName });
    expect(unknownName.failure).toMatchObject({
      grpcCode: grpc.status.NOT_FOUND,
      code: "ens_name_not_found",
    });
    expect(unknownName.sent).toHaveLength(1);
    const noPrimary = await failing("ens", { input: D });
    expect(noPrimary.failure.code).toBe("ens_name_not_found");
  });

  it("erc20Transfers: decoded, ordered, ERC-721 transfers (same topic0) left out", async () => {
    const expected = demo.erc20.transfers.map((t) =>
      lower({
        block_number: quantity(t.blockNumber),
        from: t.from,
        to: t.to,
        token: demo.erc20.address,
        tx_hash: t.txHash,
        value: t.value,
      }),
    );
    const byContract = await run("erc20Transfers", { contract: demo.erc20.address, from_block: "0x0" });
    expect(byContract.data).toEqual({ count: expected.length, transfers: expected });

    // Without a contract filter the ERC-721 Transfer logs match topic0 too, and are dropped.
    const raw = await run("events", { topic: TRANSFER_TOPIC, from_block: "0x0" });
    expect(raw.data.count).toBe(demo.erc20.transfers.length + demo.erc721.transferCount);
    const anyToken = await run("erc20Transfers", { from_block: "0x0" });
    expect(anyToken.data).toEqual({ count: expected.length, transfers: expected });

    // A wallet as sender or recipient: two filters in one batch, merged in chain order.
    const wallet = await run("erc20Transfers", { address: B, from_block: "0x0" });
    expect(wallet.sent.methods).toEqual(["eth_getLogs", "eth_getLogs"]);
    const mine = expected.filter((t) => t.from === lower(B) || t.to === lower(B));
    expect(mine.length).toBeGreaterThanOrEqual(2);
    expect(wallet.data).toEqual({ count: mine.length, transfers: mine });
  });

  it("events: raw logs filtered by contract and topics", async () => {
    const nft = await run("events", {
      contract: demo.erc721.address,
      topic: TRANSFER_TOPIC,
      from_block: "0x0",
    });
    expect(nft.data.count).toBe(demo.erc721.transferCount);
    const logs = nft.data.logs as { topics: string[]; tx_hash: string; address: string }[];
    expect(
      logs.every(
        (l) => l.topics.length === 4 && l.address.toLowerCase() === demo.erc721.address.toLowerCase(),
      ),
    ).toBe(true);
    expect(logs.map((l) => l.tx_hash)).toEqual(demo.erc721.transfers.map((t) => t.txHash));

    const zero = `0x${"0".repeat(64)}`;
    const mints = await run("events", {
      contract: demo.erc721.address,
      topic: TRANSFER_TOPIC,
      topic1: zero,
      from_block: "0x0",
    });
    expect(mints.data.count).toBe(demo.erc721.transfers.filter((t) => /^0x0+$/.test(t.from)).length);
    expect(mints.sent.body).toMatchObject({ params: [{ topics: [TRANSFER_TOPIC, zero] }] });
  });

  it("bounds log queries: default range, tags passed through, over the maximum refused with the limit named", async () => {
    const head = BigInt((await run("blockNumber", {})).data.block_number as string);

    const defaulted = await run("erc20Transfers", { contract: demo.erc20.address });
    expect(defaulted.sent.body).toMatchObject({
      params: [{ fromBlock: quantity(head - 4n), toBlock: "latest" }],
    });

    const tags = await run("events", { from_block: "earliest", to_block: "latest" });
    expect(tags.sent.body).toMatchObject({ params: [{ fromBlock: "earliest", toBlock: "latest" }] });

    const narrow = await startService({
      upstreams: { ethereum: [proxies.ethereum!.url()] },
      upstream: { headPollMs: 60_000 },
      logs: { maxBlockRange: 3, defaultBlockRange: 2 },
    });
    try {
      const tooLarge = await narrow.fail("events", { from_block: "0x0", to_block: "0x5" });
      expect(tooLarge).toMatchObject({
        grpcCode: grpc.status.INVALID_ARGUMENT,
        code: "block_range_too_large",
      });
      expect(tooLarge.message).toContain("the maximum is 3");
    } finally {
      await narrow.stop();
    }

    const inverted = await failing("erc20Transfers", { from_block: "10", to_block: "5" });
    expect(inverted.failure.code).toBe("invalid_parameter");
    expect(inverted.failure.message).toMatch(/^from_block: /);
    expect(inverted.sent).toHaveLength(0);
  });

  it("reads block tags in a log range against the tracked head: from after to (or after the head) is 400 from_block, before any node call", async () => {
    const head = BigInt((await run("blockNumber", {})).data.block_number as string);
    expect(head).toBeGreaterThan(5n);
    for (const [operation, range] of [
      ["events", { from_block: "latest", to_block: "0x5" }],
      ["erc20Transfers", { from_block: "latest", to_block: "0x5" }],
      ["events", { from_block: "latest", to_block: "earliest" }],
      ["erc20Transfers", { from_block: "finalized", to_block: "earliest" }],
      // Past the head, to_block omitted (latest): after to_block.
      ["events", { from_block: quantity(head + 5n) }],
      // Both past the head: after the head.
      ["erc20Transfers", { from_block: quantity(head + 5n), to_block: quantity(head + 10n) }],
    ] as const) {
      const refused = await failing(operation, range);
      expect(refused.failure, JSON.stringify(range)).toMatchObject({
        grpcCode: grpc.status.INVALID_ARGUMENT,
        code: "invalid_parameter",
        detail: { parameter: "from_block" },
      });
      expect(refused.failure.message).toMatch(
        /^from_block: (must not be after to_block|is after the chain head)/,
      );
      expect(refused.sent).toHaveLength(0);
      // A free refusal is no free read of block-number: no number in it is the head.
      expect(numbersIn(refused.failure.message), refused.failure.message).not.toContain(head);
    }
  });

  it("names no block the head resolves to in a range too large (from_block 0 to latest)", async () => {
    const head = BigInt((await run("blockNumber", {})).data.block_number as string);
    const narrow = await startService({
      upstreams: { ethereum: [proxies.ethereum!.url()] },
      upstream: { headPollMs: 60_000 },
      logs: { maxBlockRange: 3, defaultBlockRange: 2 },
    });
    try {
      const tooLarge = await narrow.fail("events", { from_block: "0x0", to_block: "latest" });
      expect(tooLarge).toMatchObject({ code: "block_range_too_large", detail: { max_block_range: 3 } });
      // Neither the head nor the span up to it (head + 1 blocks from block 0).
      const numbers = numbersIn(tooLarge.message);
      expect(numbers, tooLarge.message).not.toContain(head);
      expect(numbers, tooLarge.message).not.toContain(head + 1n);
    } finally {
      await narrow.stop();
    }
  });

  it("a range partly past the head ends at the head: the node is asked up to latest, the answer keeps what exists", async () => {
    const head = BigInt((await run("blockNumber", {})).data.block_number as string);
    const within = await run("erc20Transfers", { contract: demo.erc20.address, from_block: "0x0" });
    const partly = await run("erc20Transfers", {
      contract: demo.erc20.address,
      from_block: "0x0",
      to_block: quantity(head + 1_000n),
    });
    expect(partly.sent.body).toMatchObject({ params: [{ fromBlock: "0x0", toBlock: "latest" }] });
    expect(partly.data).toEqual(within.data);
    expect((partly.data.transfers as unknown[]).length).toBeGreaterThan(0);
  });

  it("refuses a result too large for the gRPC hop with result_too_large", async () => {
    const small = await startService({
      upstreams: { ethereum: [proxies.ethereum!.url()] },
      upstream: { headPollMs: 60_000 },
      maxResultBytes: 2_000,
    });
    try {
      const failure = await small.fail("events", { from_block: "0x0" });
      expect(failure).toMatchObject({ grpcCode: grpc.status.FAILED_PRECONDITION, code: "result_too_large" });
      expect(failure.message).toContain("2000");
    } finally {
      await small.stop();
    }
  });

  it("call: raw result, revert reasons decoded (Error, Panic), custom and empty reverts as revert_data", async () => {
    const selector = (sig: string) => toFunctionSelector(sig);
    const r = demo.reverter.address;
    const ok = await run("call", { to: r, data: selector("ok()") });
    expect(BigInt(ok.data.result as string)).toBe(42n);
    const atBlock = await run("call", { to: r, data: selector("ok()"), block: quantity(demo.seededBlock) });
    expect(atBlock.sent.body).toMatchObject({ params: [{ to: lower(r) }, quantity(demo.seededBlock)] });

    const reason = await failing("call", { to: r, data: selector("alwaysReverts()") });
    expect(reason.failure).toMatchObject({
      grpcCode: grpc.status.FAILED_PRECONDITION,
      code: "execution_reverted",
      message: `execution reverted: ${demo.reverter.reason}`,
    });
    expect(reason.failure.detail).toMatchObject({ reason: demo.reverter.reason });
    expect(String(reason.failure.detail?.revert_data)).toMatch(/^0x08c379a0/);

    const panic = await failing("call", { to: r, data: selector("panics()") });
    expect(panic.failure.code).toBe("execution_reverted");
    expect(String(panic.failure.detail?.reason)).toContain("0x12");
    expect(String(panic.failure.detail?.revert_data)).toMatch(/^0x4e487b71/);

    const custom = await failing("call", { to: r, data: selector("revertsWithCustomError()") });
    expect(custom.failure.code).toBe("execution_reverted");
    expect(String(custom.failure.detail?.revert_data).startsWith(demo.reverter.customError.selector)).toBe(
      true,
    );
    expect(custom.failure.detail?.reason).toBeUndefined();

    const empty = await failing("call", { to: r, data: selector("revertsWithoutReason()") });
    expect(empty.failure).toMatchObject({ code: "execution_reverted", detail: { revert_data: "0x" } });

    const future = await failing("call", { to: r, data: selector("ok()"), block: "0xffffff" });
    expect(future.failure.code).toBe("block_not_found");
  });

  it("estimateGas: a plain transfer costs 21000; a reverting transaction is execution_reverted", async () => {
    const tx = demo.estimateGas;
    const plain = await run("estimateGas", { from: tx.from, to: tx.to, value: toHex(BigInt(tx.value)) });
    expect(plain.data).toEqual({ gas_estimate: "0x5208" });

    const data = encodeFunctionData({
      abi: parseAbi(["function setValue(uint256)"]),
      functionName: "setValue",
      args: [0n],
    });
    const reverting = await failing("estimateGas", { from: A, to: demo.reverter.address, data });
    expect(reverting.failure).toMatchObject({
      code: "execution_reverted",
      message: `execution reverted: ${demo.reverter.setValue.zeroReason}`,
    });
  });
});
