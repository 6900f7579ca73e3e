// Demo contracts and their seeded history on the "ethereum" and "sepolia" chains. The deployer,
// the order of transactions and therefore every contract address are the same on each run and
// each chain. Balances, owners and allowances in the returned state are read back from the chain
// after seeding, so they are what the chain really holds.
import { getAddress, type Hex, parseUnits, toFunctionSelector } from "viem";
import { byRole } from "./accounts.ts";
import type { ChainRpc, SentTx } from "./chain.ts";
import type { Artifacts } from "./compile.ts";
import { setupEns } from "./ens.ts";
import { placeMulticall3 } from "./predeploys.ts";
import type {
  Address,
  ChainDemo,
  DevnetAccount,
  Erc20Demo,
  Erc20TransferRecord,
  Erc721Demo,
  Erc721TransferRecord,
  Erc1155Demo,
  ReverterDemo,
} from "./types.ts";

/** keccak256("Transfer(address,address,uint256)"): shared by ERC-20 and ERC-721. */
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

const topicAddress = (topic: Hex | undefined): Address => getAddress(`0x${(topic ?? "").slice(26)}`);

/** Transfer logs emitted by `token` in the given transactions, in order. */
function transferLogs(sent: SentTx[], token: Address) {
  return sent.flatMap((tx) =>
    tx.logs
      .filter((log) => getAddress(log.address) === token && log.topics[0] === TRANSFER_TOPIC)
      .map((log) => ({ tx, log })),
  );
}

async function seedErc20(rpc: ChainRpc, artifacts: Artifacts, accounts: DevnetAccount[]): Promise<Erc20Demo> {
  const [deployer, A, B, C, D] = ["deployer", "A", "B", "C", "D"].map((role) => byRole(accounts, role)) as [
    Address,
    Address,
    Address,
    Address,
    Address,
  ];
  const { abi } = artifacts.DemoDollar;
  const token = await rpc.deploy(deployer, artifacts.DemoDollar, [deployer]);
  const units = (amount: string) => parseUnits(amount, 18);

  const sent: SentTx[] = [];
  sent.push(await rpc.write(deployer, token, abi, "mint", [A, units("1000000")]));
  // One transaction per block (automine), so block-range queries see distinct blocks.
  const transfers: [Address, Address, string][] = [
    [A, B, "1000"],
    [A, C, "250"],
    [B, C, "100"],
    [A, B, "42.5"],
    [C, D, "10"],
  ];
  for (const [from, to, amount] of transfers)
    sent.push(await rpc.write(from, token, abi, "transfer", [to, units(amount)]));
  const approvals: [Address, Address, string][] = [
    [A, B, "5000"],
    [A, D, "123.456"], // the second spender
    [B, C, "1"],
  ];
  for (const [owner, spender, amount] of approvals)
    await rpc.write(owner, token, abi, "approve", [spender, units(amount)]);

  const holders = [A, B, C, D];
  const balances: Record<Address, string> = {};
  for (const holder of holders)
    balances[holder] = String(await rpc.read<bigint>(token, abi, "balanceOf", [holder]));
  const allowances = [];
  for (const [owner, spender] of approvals) {
    const amount = await rpc.read<bigint>(token, abi, "allowance", [owner, spender]);
    allowances.push({ owner, spender, amount: String(amount) });
  }
  return {
    address: token,
    name: await rpc.read<string>(token, abi, "name"),
    symbol: await rpc.read<string>(token, abi, "symbol"),
    decimals: Number(await rpc.read<number>(token, abi, "decimals")),
    totalSupply: String(await rpc.read<bigint>(token, abi, "totalSupply")),
    balances,
    allowances,
    transfers: transferLogs(sent, token).map(
      ({ tx, log }): Erc20TransferRecord => ({
        from: topicAddress(log.topics[1]),
        to: topicAddress(log.topics[2]),
        value: String(BigInt(log.data)),
        blockNumber: tx.blockNumber,
        txHash: tx.txHash,
      }),
    ),
  };
}

async function seedErc721(
  rpc: ChainRpc,
  artifacts: Artifacts,
  accounts: DevnetAccount[],
): Promise<Erc721Demo> {
  const [deployer, A, B, C] = ["deployer", "A", "B", "C"].map((role) => byRole(accounts, role)) as [
    Address,
    Address,
    Address,
    Address,
  ];
  const { abi } = artifacts.DemoTokens;
  const nft = await rpc.deploy(deployer, artifacts.DemoTokens, [deployer]);

  const sent: SentTx[] = [];
  // Tokens 1-7 minted to A, 6 and 7 then moved to B, 8 minted to B: A holds 5, B holds 3,
  // and the history has both mint and holder-to-holder Transfer logs.
  for (let id = 1n; id <= 7n; id++) sent.push(await rpc.write(deployer, nft, abi, "mint", [A, id]));
  for (const id of [6n, 7n]) sent.push(await rpc.write(A, nft, abi, "transferFrom", [A, B, id]));
  sent.push(await rpc.write(deployer, nft, abi, "mint", [B, 8n]));
  await rpc.write(A, nft, abi, "approve", [B, 1n]);
  await rpc.write(A, nft, abi, "setApprovalForAll", [C, true]);

  const owners: Record<Address, string[]> = {};
  for (const owner of [A, B]) {
    const count = await rpc.read<bigint>(nft, abi, "balanceOf", [owner]);
    const ids: string[] = [];
    for (let i = 0n; i < count; i++)
      ids.push(String(await rpc.read<bigint>(nft, abi, "tokenOfOwnerByIndex", [owner, i])));
    owners[owner] = ids;
  }
  const transfers = transferLogs(sent, nft).map(
    ({ tx, log }): Erc721TransferRecord => ({
      from: topicAddress(log.topics[1]),
      to: topicAddress(log.topics[2]),
      tokenId: String(BigInt(log.topics[3] ?? "0x0")),
      blockNumber: tx.blockNumber,
      txHash: tx.txHash,
    }),
  );
  return {
    address: nft,
    name: await rpc.read<string>(nft, abi, "name"),
    symbol: await rpc.read<string>(nft, abi, "symbol"),
    totalSupply: Number(await rpc.read<bigint>(nft, abi, "totalSupply")),
    owners,
    transfers,
    transferCount: transfers.length,
    approvals: [{ owner: A, approved: B, tokenId: "1" }],
    operators: [{ owner: A, operator: C }],
    interfaceIds: {
      erc165: "0x01ffc9a7",
      erc721: "0x80ac58cd",
      erc721Metadata: "0x5b5e139f",
      erc721Enumerable: "0x780e9d63",
    },
  };
}

async function seedErc1155(
  rpc: ChainRpc,
  artifacts: Artifacts,
  accounts: DevnetAccount[],
): Promise<Erc1155Demo> {
  const [deployer, A, B] = ["deployer", "A", "B"].map((role) => byRole(accounts, role)) as [
    Address,
    Address,
    Address,
  ];
  const { abi } = artifacts.DemoItems;
  const items = await rpc.deploy(deployer, artifacts.DemoItems, [deployer]);
  await rpc.write(deployer, items, abi, "mint", [A, 1n, 100n]);
  await rpc.write(deployer, items, abi, "mint", [A, 2n, 50n]);
  await rpc.write(A, items, abi, "safeTransferFrom", [A, B, 1n, 30n, "0x"]);
  await rpc.write(deployer, items, abi, "mintBatch", [B, [2n, 3n], [5n, 1n]]);

  const ids = ["1", "2", "3"];
  const balances: Record<Address, Record<string, string>> = {};
  for (const holder of [A, B]) {
    const perId: Record<string, string> = {};
    for (const id of ids) {
      const balance = await rpc.read<bigint>(items, abi, "balanceOf", [holder, BigInt(id)]);
      if (balance > 0n) perId[id] = String(balance);
    }
    balances[holder] = perId;
  }
  return {
    address: items,
    uri: await rpc.read<string>(items, abi, "uri", [1n]),
    ids,
    balances,
    interfaceIds: { erc165: "0x01ffc9a7", erc1155: "0xd9b67a26", erc1155MetadataUri: "0x0e89341c" },
  };
}

async function seedReverter(
  rpc: ChainRpc,
  artifacts: Artifacts,
  accounts: DevnetAccount[],
): Promise<ReverterDemo> {
  const { abi } = artifacts.DemoReverter;
  const reverter = await rpc.deploy(byRole(accounts, "deployer"), artifacts.DemoReverter);
  await rpc.write(byRole(accounts, "A"), reverter, abi, "setValue", [7n]);
  return {
    address: reverter,
    reason: "Demo: always reverts",
    revertingFunction: "alwaysReverts()",
    customError: {
      function: "revertsWithCustomError()",
      signature: "DemoError(uint256,string)",
      selector: toFunctionSelector("DemoError(uint256,string)"),
      args: ["42", "Demo: custom error"],
    },
    panic: { function: "panics()", code: 0x12 },
    emptyRevert: { function: "revertsWithoutReason()" },
    ok: { function: "ok()", result: "42" },
    setValue: { function: "setValue(uint256)", zeroReason: "Demo: zero value", current: "7" },
  };
}

/** Deploy and seed everything on one demo chain; call on a fresh anvil (addresses depend on nonces). */
export async function seedDemoChain(
  rpc: ChainRpc,
  artifacts: Artifacts,
  accounts: DevnetAccount[],
  chainId: number,
  universalResolver: Address,
): Promise<ChainDemo> {
  const erc20 = await seedErc20(rpc, artifacts, accounts);
  const erc721 = await seedErc721(rpc, artifacts, accounts);
  const erc1155 = await seedErc1155(rpc, artifacts, accounts);
  const reverter = await seedReverter(rpc, artifacts, accounts);
  const ens = await setupEns(
    rpc,
    artifacts,
    byRole(accounts, "deployer"),
    [
      { name: "demo.eth", owner: byRole(accounts, "A") },
      { name: "alice.eth", owner: byRole(accounts, "B") },
    ],
    universalResolver,
  );
  const multicall3 = await placeMulticall3(rpc, artifacts);
  return {
    chainId,
    erc20,
    erc721,
    erc1155,
    reverter,
    ens,
    multicall3,
    estimateGas: { from: byRole(accounts, "A"), to: byRole(accounts, "D"), value: String(10n ** 15n) },
    seededBlock: await rpc.blockNumber(),
  };
}
