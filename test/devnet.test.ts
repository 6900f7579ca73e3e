// The embedded devnet (@tollgate/devnet): five anvil chains on loopback, the demo contracts seeded
// on ethereum and sepolia, Multicall3 on every chain, and stop() leaving no anvil behind. The
// settlement USDC's EIP-3009 and permit are in devnet-usdc.test.ts; the fixture in devnet.support.ts.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { byRole } from "@tollgate/devnet";
import { type Address, erc20Abi, erc721Abi, parseAbi } from "viem";
import { describe, expect, it } from "vitest";
import { client, devnet, useDevnet } from "./devnet.support.ts";

const erc721EnumerableAbi = parseAbi([
  "function tokenOfOwnerByIndex(address owner, uint256 index) view returns (uint256)",
  "function totalSupply() view returns (uint256)",
  "function supportsInterface(bytes4 id) view returns (bool)",
]);
const erc1155Abi = parseAbi([
  "function balanceOf(address account, uint256 id) view returns (uint256)",
  "function supportsInterface(bytes4 id) view returns (bool)",
]);
const reverterAbi = parseAbi([
  "function alwaysReverts() pure",
  "error DemoError(uint256 code, string detail)",
]);
const multicall3Abi = parseAbi([
  "function getEthBalance(address addr) view returns (uint256)",
  "function getChainId() view returns (uint256)",
]);

/** Direct anvil children of this process (the devnet's nodes). */
function anvilChildren(): number[] {
  const out = execFileSync("ps", ["-o", "pid=,ppid=,comm=", "-e"], { encoding: "utf8" });
  return out
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, ppid, comm]) => Number(ppid) === process.pid && comm === "anvil")
    .map(([pid]) => Number(pid));
}

describe("devnet", () => {
  useDevnet();

  it("runs five chains on loopback with the expected chain ids and writes devnet.json", async () => {
    expect(Object.keys(devnet.chains).sort()).toEqual([
      "ethereum",
      "sepolia",
      "settlement",
      "tempo",
      "tollnet",
    ]);
    const ids: Record<string, number> = {
      ethereum: 1,
      sepolia: 11155111,
      tollnet: 4663,
      settlement: 84532,
      tempo: 4217,
    };
    for (const [name, chain] of Object.entries(devnet.chains)) {
      expect(chain.rpcUrl).toBe(`http://127.0.0.1:${chain.port}`);
      expect(await client(name).getChainId()).toBe(ids[name]);
      // Block time must track the wall clock (x402 validBefore/validAfter depend on it). The latest
      // block was mined during setup, seconds ago on a loaded machine: within 30 s (an offer's
      // validity window is 60 s and more), where a chain on its genesis time would be days off.
      const block = await client(name).getBlock();
      expect(Math.abs(Number(block.timestamp) - Date.now() / 1000)).toBeLessThan(30);
    }
    expect(existsSync(devnet.file)).toBe(true);
    const file = JSON.parse(readFileSync(devnet.file, "utf8"));
    expect(file.chains.ethereum.rpcUrl).toBe(devnet.chains.ethereum?.rpcUrl);
    expect(file.demo.settlement.usdc.address).toBe(devnet.demo.settlement.usdc.address);
    expect(devnet.accounts.filter((a) => a.role.startsWith("payer")).length).toBeGreaterThanOrEqual(6);
  });

  for (const name of ["ethereum", "sepolia"] as const) {
    describe(name, () => {
      it("ERC-20 balances, allowances and Transfer history match DemoState", async () => {
        const { erc20 } = devnet.demo[name];
        const c = client(name);
        expect(await c.readContract({ address: erc20.address, abi: erc20Abi, functionName: "symbol" })).toBe(
          "DEMO",
        );
        for (const [holder, balance] of Object.entries(erc20.balances)) {
          const onChain = await c.readContract({
            address: erc20.address,
            abi: erc20Abi,
            functionName: "balanceOf",
            args: [holder as Address],
          });
          expect(onChain.toString()).toBe(balance);
        }
        expect(erc20.allowances.length).toBeGreaterThanOrEqual(2);
        for (const { owner, spender, amount } of erc20.allowances) {
          const onChain = await c.readContract({
            address: erc20.address,
            abi: erc20Abi,
            functionName: "allowance",
            args: [owner, spender],
          });
          expect(onChain.toString()).toBe(amount);
        }
        const logs = await c.getContractEvents({
          address: erc20.address,
          abi: erc20Abi,
          eventName: "Transfer",
          fromBlock: 0n,
        });
        expect(logs.map((l) => l.transactionHash)).toEqual(erc20.transfers.map((t) => t.txHash));
        expect(new Set(erc20.transfers.map((t) => t.blockNumber)).size).toBe(erc20.transfers.length);
      });

      it("ERC-721 Enumerable owners match DemoState and interfaces are reported", async () => {
        const { erc721 } = devnet.demo[name];
        const c = client(name);
        const A = byRole(devnet.accounts, "A");
        const B = byRole(devnet.accounts, "B");
        expect(erc721.owners[A]).toHaveLength(5);
        expect(erc721.owners[B]).toHaveLength(3);
        for (const [owner, ids] of Object.entries(erc721.owners)) {
          for (const [index, id] of ids.entries()) {
            const onChain = await c.readContract({
              address: erc721.address,
              abi: erc721EnumerableAbi,
              functionName: "tokenOfOwnerByIndex",
              args: [owner as Address, BigInt(index)],
            });
            expect(onChain.toString()).toBe(id);
          }
        }
        for (const id of Object.values(erc721.interfaceIds)) {
          expect(
            await c.readContract({
              address: erc721.address,
              abi: erc721EnumerableAbi,
              functionName: "supportsInterface",
              args: [id],
            }),
          ).toBe(true);
        }
        const logs = await c.getContractEvents({
          address: erc721.address,
          abi: erc721Abi,
          eventName: "Transfer",
          fromBlock: 0n,
        });
        expect(logs).toHaveLength(erc721.transferCount);
      });

      it("ERC-1155 balances match DemoState", async () => {
        const { erc1155 } = devnet.demo[name];
        const c = client(name);
        for (const [holder, perId] of Object.entries(erc1155.balances)) {
          for (const [id, amount] of Object.entries(perId)) {
            const onChain = await c.readContract({
              address: erc1155.address,
              abi: erc1155Abi,
              functionName: "balanceOf",
              args: [holder as Address, BigInt(id)],
            });
            expect(onChain.toString()).toBe(amount);
          }
        }
        expect(
          await c.readContract({
            address: erc1155.address,
            abi: erc1155Abi,
            functionName: "supportsInterface",
            args: [erc1155.interfaceIds.erc1155],
          }),
        ).toBe(true);
      });

      it("reverter reverts with the known reason; a plain transfer estimates", async () => {
        const { reverter, estimateGas } = devnet.demo[name];
        const c = client(name);
        await expect(
          c.simulateContract({ address: reverter.address, abi: reverterAbi, functionName: "alwaysReverts" }),
        ).rejects.toThrow(reverter.reason);
        const gas = await c.estimateGas({
          account: estimateGas.from,
          to: estimateGas.to,
          value: BigInt(estimateGas.value),
        });
        expect(gas).toBe(21000n);
      });

      it("ENS resolves forward and reverse through viem's universal resolver", async () => {
        const { ens } = devnet.demo[name];
        const c = client(name);
        expect(ens.names.map((n) => n.name)).toEqual(["demo.eth", "alice.eth"]);
        for (const { name: ensName, address, texts } of ens.names) {
          expect(await c.getEnsAddress({ name: ensName })).toBe(address);
          expect(await c.getEnsName({ address })).toBe(ensName);
          expect(await c.getEnsText({ name: ensName, key: "url" })).toBe(texts.url);
          expect(await c.getEnsResolver({ name: ensName })).toBe(ens.publicResolver);
        }
        expect(ens.names[0]?.address).toBe(byRole(devnet.accounts, "A"));
        expect(await c.getEnsAddress({ name: ens.unknownName })).toBeNull();
        expect(await c.getEnsName({ address: byRole(devnet.accounts, "C") })).toBeNull();
      });
    });
  }

  it("Multicall3 serves viem multicall on every chain", async () => {
    const A = byRole(devnet.accounts, "A");
    for (const name of Object.keys(devnet.chains)) {
      const c = client(name);
      const results = await c.multicall({
        allowFailure: false,
        contracts: [
          { address: devnet.demo.multicall3, abi: multicall3Abi, functionName: "getEthBalance", args: [A] },
          { address: devnet.demo.multicall3, abi: multicall3Abi, functionName: "getChainId" },
        ],
      });
      expect(results[0]).toBe(await c.getBalance({ address: A }));
      expect(Number(results[1])).toBe(devnet.chains[name]?.chainId);
    }
    const { erc20 } = devnet.demo.ethereum;
    const [balance, failed] = await client("ethereum").multicall({
      contracts: [
        { address: erc20.address, abi: erc20Abi, functionName: "balanceOf", args: [A] },
        { address: devnet.demo.ethereum.reverter.address, abi: reverterAbi, functionName: "alwaysReverts" },
      ],
    });
    expect(balance).toEqual({ status: "success", result: BigInt(erc20.balances[A] ?? -1) });
    expect(failed?.status).toBe("failure");
  });

  it("stop() kills every anvil it started", async () => {
    expect(anvilChildren()).toHaveLength(5);
    const shim = devnet.chains.tempo?.rpcUrl ?? "";
    await devnet.stop();
    expect(anvilChildren()).toHaveLength(0);
    await expect(fetch(shim, { method: "POST", body: "{}" })).rejects.toThrow(); // the Tempo shim too
    await expect(client("ethereum").getBlockNumber()).rejects.toThrow();
  });
});
