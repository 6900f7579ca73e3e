// Every endpoint, on both chain networks, reads the devnet's seeded state through the whole mesh
// with an API key; every answer is also checked against /openapi.json, and the last test checks
// that the file's calls covered the whole catalog. The defaults are in endpoints-defaults.test.ts;
// the keyed call in endpoints.support.ts.
import { ENDPOINTS, type EndpointId } from "@tollgate/catalog";
import type { ChainDemo } from "@tollgate/devnet";
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  formatUnits,
  http,
  numberToHex,
  pad,
  parseUnits,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { lower } from "../support/addresses.ts";
import {
  A,
  B,
  C,
  CHAIN_NETWORKS,
  type ChainRequest,
  calldata,
  D,
  devnet,
  firstToken,
  TRANSFER_TOPIC,
  validRequests,
} from "../support/devnet.ts";
import { call, metered, ok, served, useSuiteKey } from "./endpoints.support.ts";

useSuiteKey();

describe.each(CHAIN_NETWORKS)("every endpoint on %s reads the devnet's known state", (network) => {
  const demo: ChainDemo = devnet.demo[network];
  const q = (query: Record<string, string> = {}) => ({ query: { ...query, network } });
  const base = validRequests(network);

  it("erc20-balance: balances after the seeded transfers, as decimal strings with decimals and symbol", async () => {
    // Mint 1,000,000 to A; A→B 1000, A→C 250, B→C 100, A→B 42.5, C→D 10.
    const expected = { [A]: "998707.5", [B]: "942.5", [C]: "340", [D]: "10" };
    for (const [holder, amount] of Object.entries(expected)) {
      const data = await ok("erc20Balance", q({ address: holder, contract: demo.erc20.address }));
      expect(data).toEqual(
        lower({
          account: holder,
          balance: demo.erc20.balances[holder as `0x${string}`],
          decimals: 18,
          symbol: "DEMO",
          token: demo.erc20.address,
        }),
      );
      expect(formatUnits(BigInt(data.balance), 18)).toBe(amount);
    }
  });

  const node = () => createPublicClient({ transport: http(devnet.chains[network]!.rpcUrl) });

  it("balance: the account's wei as the node has it, at the head and at an earlier block", async () => {
    const now = await ok("balance", { path: { address: A }, ...q() });
    expect(now).toEqual({
      account: lower(A),
      balance: String(await node().getBalance({ address: A })),
      decimals: 18,
      symbol: "ETH",
      block: "latest",
    });
    const then = await ok("balance", { path: { address: A }, ...q({ block: "1" }) });
    expect(then).toMatchObject({
      balance: String(await node().getBalance({ address: A, blockNumber: 1n })),
      block: "0x1",
    });
  });

  it("transaction and receipt: a seeded transfer as the node has it, with its Transfer log; 404 for an unknown hash", async () => {
    const sent = demo.erc20.transfers[1]!; // A → B, 1000 DEMO
    const raw = await node().getTransaction({ hash: sent.txHash });
    expect(await ok("transaction", { path: { hash: sent.txHash }, ...q() })).toMatchObject({
      hash: sent.txHash,
      block_number: numberToHex(sent.blockNumber),
      from: lower(A),
      to: lower(demo.erc20.address),
      value: "0x0",
      nonce: numberToHex(raw.nonce),
      input: raw.input,
      pending: false,
    });
    const receipt = await ok("receipt", { path: { hash: sent.txHash }, ...q() });
    expect(receipt).toMatchObject({
      transaction_hash: sent.txHash,
      block_number: numberToHex(sent.blockNumber),
      from: lower(A),
      to: lower(demo.erc20.address),
      contract_address: null,
      status: "success",
    });
    expect(receipt.logs).toEqual([
      {
        address: lower(demo.erc20.address),
        block_number: numberToHex(sent.blockNumber),
        data: pad(numberToHex(parseUnits("1000", 18))),
        log_index: expect.stringMatching(/^0x[0-9a-f]+$/),
        topics: [TRANSFER_TOPIC, pad(lower(A)), pad(lower(B))],
        tx_hash: sent.txHash,
      },
    ]);
    const unknown = `0x${"ab".repeat(32)}`;
    for (const id of ["transaction", "receipt"] as const) {
      const res = await call(id, { path: { hash: unknown }, ...q() });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: "transaction_not_found" });
    }
  });

  it("receipt: a mined revert says reverted; a contract creation names the contract and has no `to`", async () => {
    const rpcUrl = devnet.chains[network]!.rpcUrl;
    const account = privateKeyToAccount(generatePrivateKey());
    await node().request({
      method: "anvil_setBalance" as never,
      params: [account.address, numberToHex(10n ** 18n)] as never,
    });
    const chain = defineChain({
      id: await node().getChainId(),
      name: network,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    });
    const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) });
    const reverted = await wallet.sendTransaction({
      to: demo.reverter.address,
      data: calldata.alwaysReverts,
      gas: 100_000n,
    });
    const created = await wallet.sendTransaction({ data: "0x00" });
    for (const hash of [reverted, created]) await node().waitForTransactionReceipt({ hash });
    expect(await ok("receipt", { path: { hash: reverted }, ...q() })).toMatchObject({
      status: "reverted",
      to: lower(demo.reverter.address),
      logs: [],
    });
    const creation = await ok("receipt", { path: { hash: created }, ...q() });
    const expected = (await node().getTransactionReceipt({ hash: created })).contractAddress;
    expect(creation).toMatchObject({
      status: "success",
      to: null,
      contract_address: expected?.toLowerCase(),
    });
    expect(await ok("transaction", { path: { hash: created }, ...q() })).toMatchObject({
      to: null,
      input: "0x00",
    });
  });

  it("nft-metadata: an ERC-721 token's URI and owner, an ERC-1155 id's URI with {id} filled in; a missing token reverts", async () => {
    const id = firstToken(demo);
    expect(
      await ok("nftMetadata", { path: { contract: demo.erc721.address, token_id: id }, ...q() }),
    ).toEqual({
      contract: lower(demo.erc721.address),
      token_id: id,
      standard: "ERC721",
      token_uri: `https://tollgate.invalid/dnft/${id}`,
      owner: lower(A),
      metadata: null,
    });
    expect(
      await ok("nftMetadata", { path: { contract: demo.erc1155.address, token_id: "1" }, ...q() }),
    ).toEqual({
      contract: lower(demo.erc1155.address),
      token_id: "1",
      standard: "ERC1155",
      token_uri: demo.erc1155.uri.replace("{id}", "1".padStart(64, "0")),
      owner: null,
      metadata: null,
    });
    const missing = await call("nftMetadata", {
      path: { contract: demo.erc721.address, token_id: "999999" },
      ...q(),
    });
    expect(missing.status).toBe(422);
    expect(missing.body.error).toMatchObject({ code: "execution_reverted" });
  });

  it("allowance: hex amount with the token's decimals", async () => {
    for (const { owner, spender, amount } of demo.erc20.allowances) {
      const data = await ok("allowance", q({ contract: demo.erc20.address, owner, spender }));
      expect(data).toEqual(
        lower({
          allowance: numberToHex(BigInt(amount)),
          contract: demo.erc20.address,
          decimals: 18,
          owner,
          spender,
        }),
      );
    }
    expect(demo.erc20.allowances.find((a) => a.spender === D)?.amount).toBe("123456000000000000000");
    const none = await ok("allowance", q({ contract: demo.erc20.address, owner: D, spender: A }));
    expect(none.allowance).toBe("0x0");
  });

  it("erc721-tokens: the ids held in index order; max cuts the list and balance keeps the total", async () => {
    const all = await ok("erc721Tokens", q({ contract: demo.erc721.address, address: A }));
    expect(all).toEqual(
      lower({
        contract: demo.erc721.address,
        owner: A,
        count: 5,
        balance: "5",
        tokens: ["1", "2", "3", "4", "5"],
      }),
    );
    const b = await ok("erc721Tokens", q({ contract: demo.erc721.address, address: B, max: "1000" }));
    expect(b).toMatchObject({ count: 3, balance: "3", tokens: demo.erc721.owners[B] });
    const cut = await ok("erc721Tokens", q({ contract: demo.erc721.address, address: A, max: "2" }));
    expect(cut).toMatchObject({ count: 2, balance: "5", tokens: ["1", "2"] });
    const empty = await ok("erc721Tokens", q({ contract: demo.erc721.address, address: D, max: "1" }));
    expect(empty).toMatchObject({ count: 0, balance: "0", tokens: [] });
  });

  it("erc1155-balance: seeded balances per id, zero where nothing is held", async () => {
    const cases: [string, string, string][] = [
      [A, "1", "70"],
      [A, "2", "50"],
      [A, "3", "0"],
      [B, "1", "30"],
      [B, "3", "1"],
    ];
    for (const [holder, id, balance] of cases) {
      const data = await ok(
        "erc1155Balance",
        q({ address: holder, contract: demo.erc1155.address, token_id: id }),
      );
      expect(data).toEqual(lower({ account: holder, balance, contract: demo.erc1155.address, token_id: id }));
    }
  });

  it("ens: forward demo.eth → A, reverse A → demo.eth, an unknown name is 404 ens_name_not_found", async () => {
    for (const { name, address } of demo.ens.names) {
      expect(await ok("ens", { path: { input: name }, ...q() })).toEqual(
        lower({ address, input: name, mode: "forward" }),
      );
      expect(await ok("ens", { path: { input: address }, ...q() })).toEqual(
        lower({ address, input: address, mode: "reverse", name }),
      );
    }
    expect(demo.ens.names[0]).toMatchObject({ name: "demo.eth", address: A });

    const unknown = await call("ens", { path: { input: demo.ens.unknownName }, ...q() });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("ens_name_not_found");
    const noName = await call("ens", { path: { input: D }, ...q() });
    expect(noName.status).toBe(404);
    expect(noName.body.error.code).toBe("ens_name_not_found");
  });

  it("erc20-transfers: the seeded transfers decoded; `address` matches sender or recipient; no ERC-721 transfers", async () => {
    const expected = demo.erc20.transfers.map((t) =>
      lower({
        block_number: numberToHex(t.blockNumber),
        from: t.from,
        to: t.to,
        token: demo.erc20.address,
        tx_hash: t.txHash,
        value: t.value,
      }),
    );
    const range = { from_block: "0", to_block: String(demo.seededBlock) };
    const byContract = await ok("erc20Transfers", q({ contract: demo.erc20.address, ...range }));
    expect(byContract).toEqual({ count: 6, transfers: expected });

    // B received twice from A and sent once to C: both directions, in block order.
    const forB = await ok("erc20Transfers", q({ address: B, ...range }));
    expect(forB.transfers).toEqual(expected.filter((t) => t.from === lower(B) || t.to === lower(B)));
    expect(forB.transfers.map((t: { block_number: string }) => t.block_number)).toEqual([
      "0x3",
      "0x5",
      "0x6",
    ]);
    expect(forB.count).toBe(3);

    // DNFT Transfer logs share topic0 (and B received some) but are not ERC-20 transfers.
    const everything = await ok("erc20Transfers", q(range));
    const tokens = new Set(everything.transfers.map((t: { token: string }) => t.token));
    expect(tokens.has(lower(demo.erc721.address))).toBe(false);
    expect(everything.transfers).toEqual(expect.arrayContaining(expected));

    const oneBlock = await ok("erc20Transfers", q({ from_block: "0x4", to_block: "0x4" }));
    expect(oneBlock.transfers).toEqual([expected[2]]);
  });

  it("events: the raw log of a known transfer by topic and contract", async () => {
    const transfer = demo.erc20.transfers[1]!;
    const block = numberToHex(transfer.blockNumber);
    const data = await ok(
      "events",
      q({ contract: demo.erc20.address, topic: TRANSFER_TOPIC, from_block: block, to_block: block }),
    );
    expect(data.count).toBe(1);
    const [log] = data.logs;
    expect(log.address).toBe(lower(demo.erc20.address));
    expect(log).toMatchObject({
      block_number: block,
      data: pad(numberToHex(BigInt(transfer.value))),
      topics: [TRANSFER_TOPIC, pad(transfer.from).toLowerCase(), pad(transfer.to).toLowerCase()],
      tx_hash: transfer.txHash,
    });

    // topic1 narrows to the indexed sender: every transfer A sent, nothing else.
    const fromA = await ok(
      "events",
      q({
        contract: demo.erc20.address,
        topic: TRANSFER_TOPIC,
        topic1: pad(A).toLowerCase(),
        from_block: "0",
        to_block: String(demo.seededBlock),
      }),
    );
    expect(fromA.logs.map((l: { tx_hash: string }) => l.tx_hash)).toEqual(
      demo.erc20.transfers.filter((t) => t.from === A).map((t) => t.txHash),
    );
  });

  it("contract: each demo contract's interfaces; a wallet claims none", async () => {
    expect(await ok("contract", { path: { address: demo.erc20.address }, ...q() })).toEqual(
      lower({
        address: demo.erc20.address,
        name: "Demo Dollar",
        symbol: "DEMO",
        decimals: 18,
        interfaces: ["ERC20"],
      }),
    );
    expect(await ok("contract", { path: { address: demo.erc721.address }, ...q() })).toEqual(
      lower({
        address: demo.erc721.address,
        name: "Demo Tokens",
        symbol: "DNFT",
        decimals: null,
        interfaces: ["ERC721"],
      }),
    );
    const items = await ok("contract", { path: { address: demo.erc1155.address }, ...q() });
    expect(items).toMatchObject(
      lower({ address: demo.erc1155.address, decimals: null, interfaces: ["ERC1155"] }),
    );
    const wallet = await ok("contract", { path: { address: A }, ...q() });
    expect(wallet).toEqual(lower({ address: A, name: null, symbol: null, decimals: null, interfaces: [] }));
  });

  it("code: bytecode of a contract, empty for a wallet", async () => {
    const contract = await ok("code", { path: { address: demo.erc20.address }, ...q() });
    expect(contract.address).toBe(lower(demo.erc20.address));
    expect(contract.is_contract).toBe(true);
    expect(contract.code).toMatch(/^0x([0-9a-f]{2})+$/);
    expect(contract.bytecode_size).toBe((contract.code.length - 2) / 2);
    expect(contract.bytecode_size).toBeGreaterThan(100);
    const wallet = await ok("code", { path: { address: A }, ...q() });
    expect(wallet).toEqual(lower({ address: A, code: "0x", bytecode_size: 0, is_contract: false }));
  });

  it("block: by number, hex and tag, with transaction hashes; an unknown block is 404 block_not_found", async () => {
    const transfer = demo.erc20.transfers[1]!;
    const byNumber = await ok("block", { path: { number: String(transfer.blockNumber) }, ...q() });
    expect(byNumber.number).toBe(numberToHex(transfer.blockNumber));
    expect(byNumber.transactions).toEqual([transfer.txHash]);
    for (const key of ["gas_limit", "gas_used", "timestamp"]) expect(byNumber[key]).toMatch(/^0x[0-9a-f]+$/);
    expect(byNumber.hash).toMatch(/^0x[0-9a-f]{64}$/);

    const byHex = await ok("block", { path: { number: numberToHex(transfer.blockNumber) }, ...q() });
    expect(byHex).toEqual(byNumber);
    const parent = await ok("block", { path: { number: String(transfer.blockNumber - 1) }, ...q() });
    expect(byNumber.parent_hash).toBe(parent.hash);
    expect(parent.transactions).toEqual([demo.erc20.transfers[0]!.txHash]);

    const latest = await ok("block", { path: { number: "latest" }, ...q() });
    expect(Number(BigInt(latest.number))).toBeGreaterThanOrEqual(demo.seededBlock);
    const earliest = await ok("block", { path: { number: "earliest" }, ...q() });
    expect(earliest).toMatchObject({ number: "0x0", transactions: [] });

    for (const tag of ["pending", "safe", "finalized"]) {
      const block = await ok("block", { path: { number: tag }, ...q() });
      expect(Number(BigInt(block.number ?? "0x0"))).toBeLessThanOrEqual(Number(BigInt(latest.number)) + 1);
    }

    const unknown = await call("block", { path: { number: "99999999" }, ...q() });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("block_not_found");
  });

  it("call: a view returns its value, `block` reads history, a revert is 422 with revert_data and reason", async () => {
    const okResult = await ok("call", { ...q(), body: { to: demo.reverter.address, data: calldata.ok } });
    expect(BigInt(okResult.result)).toBe(42n);

    // B held nothing at the mint block and 1000 DEMO one block later.
    const balanceOfB = { to: demo.erc20.address, data: calldata.balanceOf(B) };
    const mint = demo.erc20.transfers[0]!.blockNumber;
    const atMint = await ok("call", { ...q(), body: { ...balanceOfB, block: String(mint) } });
    expect(BigInt(atMint.result)).toBe(0n);
    const after = await ok("call", { ...q(), body: { ...balanceOfB, block: numberToHex(mint + 1) } });
    expect(BigInt(after.result)).toBe(10n ** 21n);
    const now = await ok("call", { ...q(), body: balanceOfB });
    expect(BigInt(now.result).toString()).toBe(demo.erc20.balances[B]);

    const reverted = await call("call", {
      ...q(),
      body: { to: demo.reverter.address, data: calldata.alwaysReverts },
    });
    expect(reverted.status).toBe(422);
    expect(reverted.body.error).toMatchObject({
      code: "execution_reverted",
      reason: demo.reverter.reason,
      revert_data: expect.stringMatching(/^0x08c379a0/),
    });
    expect(reverted.body.error.message).toContain(demo.reverter.reason);

    const custom = await call("call", {
      ...q(),
      body: { to: demo.reverter.address, data: calldata.customError },
    });
    expect(custom.status).toBe(422);
    expect(custom.body.error.revert_data.startsWith(demo.reverter.customError.selector)).toBe(true);
    const panic = await call("call", { ...q(), body: { to: demo.reverter.address, data: calldata.panics } });
    expect(panic.status).toBe(422);
    expect(panic.body.error.reason).toContain("0x12");

    const future = await call("call", { ...q(), body: { ...balanceOfB, block: "99999999" } });
    expect(future.status).toBe(404);
    expect(future.body.error.code).toBe("block_not_found");
  });

  it("estimate-gas: 21000 for the plain transfer; a reverting call is 422", async () => {
    expect(await ok("estimateGas", base.estimateGas)).toEqual({ gas_estimate: numberToHex(21000) });
    const reverting = await call("estimateGas", {
      ...q(),
      body: { from: A, to: demo.reverter.address, data: calldata.alwaysReverts },
    });
    expect(reverting.status).toBe(422);
    expect(reverting.body.error).toMatchObject({ code: "execution_reverted", reason: demo.reverter.reason });
  });

  it("token reads against a wallet or the wrong standard are 422 execution_reverted naming the function", async () => {
    const cases: [EndpointId, ChainRequest, string][] = [
      ["erc20Balance", q({ address: A, contract: B }), "balanceOf(address)"],
      ["allowance", q({ contract: B, owner: A, spender: C }), "allowance(address,address)"],
      ["erc1155Balance", q({ address: A, contract: B, token_id: "1" }), "balanceOf(address,uint256)"],
      // DEMO is an ERC-20: A's balance is not a list of ids it could enumerate.
      ["erc721Tokens", q({ contract: demo.erc20.address, address: A }), "tokenOfOwnerByIndex"],
    ];
    for (const [id, req, fn] of cases) {
      const res = await call(id, req);
      expect(res.status, `${id}: ${JSON.stringify(res.body)}`).toBe(422);
      expect(res.body.error).toMatchObject({ code: "execution_reverted", revert_data: "0x" });
      expect(res.body.error.reason).toContain(fn);
    }
  });

  it("chain-id, block-number and network-info name the chain and its head", async () => {
    const chainId = numberToHex(demo.chainId);
    expect(await ok("chainId", q())).toEqual({ chain_id: chainId, network });
    const head = await ok("blockNumber", q());
    expect(head.network).toBe(network);
    expect(Number(BigInt(head.block_number))).toBeGreaterThanOrEqual(demo.seededBlock);
    const info = await ok("networkInfo", q());
    expect(info).toEqual({
      chain_id: chainId,
      block_number: expect.stringMatching(/^0x[0-9a-f]+$/),
      gas_price: expect.stringMatching(/^0x[0-9a-f]+$/),
      network,
    });
    expect(BigInt(info.block_number)).toBeGreaterThanOrEqual(BigInt(head.block_number));
  });
});

it("covered every catalog endpoint with a 200 above, metered against the key", () => {
  expect([...served].sort()).toEqual(ENDPOINTS.map((e) => e.path).sort());
  expect(metered).toBeGreaterThan(0);
});
