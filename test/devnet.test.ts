import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { byRole, type Devnet, startDevnet } from "@tollgate/devnet";
import {
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  erc721Abi,
  type Hex,
  http,
  parseAbi,
  parseSignature,
  toHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { mainnet, sepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

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
const usdcAbi = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function DOMAIN_SEPARATOR() view returns (bytes32)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)",
  "function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)",
  "function nonces(address owner) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
]);
const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

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
  let devnet: Devnet;
  const chainFor = (name: string) => {
    const chain = devnet.chains[name];
    if (!chain) throw new Error(`no chain ${name}`);
    const known: Record<string, typeof mainnet | typeof sepolia> = { ethereum: mainnet, sepolia };
    const definition =
      known[name] ??
      defineChain({
        id: chain.chainId,
        name,
        nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
        rpcUrls: { default: { http: [chain.rpcUrl] } },
        contracts: { multicall3: { address: devnet.demo.multicall3 } },
      });
    return { definition, rpcUrl: chain.rpcUrl };
  };
  const client = (name: string) => {
    const { definition, rpcUrl } = chainFor(name);
    return createPublicClient({ chain: definition, transport: http(rpcUrl, { retryCount: 0 }) });
  };
  /** Local (viem-signed) account of a devnet role. */
  const signer = (role: string) => {
    const account = devnet.accounts.find((a) => a.role === role);
    if (!account) throw new Error(`no account ${role}`);
    return privateKeyToAccount(account.privateKey);
  };
  const wallet = (name: string, role: string) => {
    const { definition, rpcUrl } = chainFor(name);
    return createWalletClient({
      account: signer(role),
      chain: definition,
      transport: http(rpcUrl, { retryCount: 0 }),
    });
  };

  // Own devnet.json so concurrent suites do not overwrite each other's file.
  const file = join(tmpdir(), `tollgate-devnet-test-${process.pid}.json`);

  beforeAll(async () => {
    devnet = await startDevnet({ file });
  }, 60_000);

  afterAll(async () => {
    await devnet?.stop();
    rmSync(file, { force: true });
  });

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
      // Block time must track the wall clock (x402 validBefore/validAfter depend on it).
      const block = await client(name).getBlock();
      expect(Math.abs(Number(block.timestamp) - Date.now() / 1000)).toBeLessThan(5);
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

  it("settlement USDC moves funds with EIP-3009 transferWithAuthorization (both signature forms)", async () => {
    const { usdc, payTo, facilitator } = devnet.demo.settlement;
    const c = client("settlement");
    const payer = signer("payer1");
    const submitter = wallet("settlement", "facilitator");
    expect(usdc.decimals).toBe(6);
    expect(usdc.domain).toMatchObject({ name: "USD Coin", version: "2", chainId: 84532 });
    expect(usdc.balances[payer.address]).toBe("1000000000");
    expect(
      await c.readContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "balanceOf",
        args: [facilitator],
      }),
    ).toBe(0n);

    const balanceOf = (who: Address) =>
      c.readContract({ address: usdc.address, abi: usdcAbi, functionName: "balanceOf", args: [who] });
    const payeeBefore = await balanceOf(payTo);
    const now = Math.floor(Date.now() / 1000);

    for (const form of ["vrs", "bytes"] as const) {
      const message = {
        from: payer.address,
        to: payTo,
        value: 1_500n, // 0.0015 USDC
        validAfter: BigInt(now - 600),
        validBefore: BigInt(now + 300),
        nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
      };
      const signature = await payer.signTypedData({
        domain: usdc.domain,
        types: transferWithAuthorizationTypes,
        primaryType: "TransferWithAuthorization",
        message,
      });
      const base = [
        message.from,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
      ] as const;
      const { v, r, s } = parseSignature(signature);
      const hash =
        form === "vrs"
          ? await submitter.writeContract({
              address: usdc.address,
              abi: usdcAbi,
              functionName: "transferWithAuthorization",
              args: [...base, Number(v), r, s],
            })
          : await submitter.writeContract({
              address: usdc.address,
              abi: usdcAbi,
              functionName: "transferWithAuthorization",
              args: [...base, signature],
            });
      const receipt = await c.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      expect(receipt.status).toBe("success");
      expect(
        await c.readContract({
          address: usdc.address,
          abi: usdcAbi,
          functionName: "authorizationState",
          args: [payer.address, message.nonce],
        }),
      ).toBe(true);
      // Replaying the same authorization must fail.
      await expect(
        c.simulateContract({
          account: submitter.account,
          address: usdc.address,
          abi: usdcAbi,
          functionName: "transferWithAuthorization",
          args: [...base, signature],
        }),
      ).rejects.toThrow("authorization is used or canceled");
    }
    expect(await balanceOf(payTo)).toBe(payeeBefore + 3_000n);
    expect(await balanceOf(payer.address)).toBe(1_000_000_000n - 3_000n);
  });

  it("settlement USDC supports receiveWithAuthorization, cancelAuthorization and permit", async () => {
    const { usdc, payTo } = devnet.demo.settlement;
    const c = client("settlement");
    const payer = signer("payer2");
    const payee = wallet("settlement", "payTo");
    const mined = async (hash: Hex) =>
      expect((await c.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe("success");
    const now = BigInt(Math.floor(Date.now() / 1000));
    const authorization = (nonce: Hex) => ({
      from: payer.address,
      to: payTo,
      value: 2_000n,
      validAfter: 0n,
      validBefore: now + 300n,
      nonce,
    });

    // receiveWithAuthorization: only the payee may submit it.
    const received = authorization(toHex(1, { size: 32 }));
    const receiveSig = await payer.signTypedData({
      domain: usdc.domain,
      types: { ReceiveWithAuthorization: transferWithAuthorizationTypes.TransferWithAuthorization },
      primaryType: "ReceiveWithAuthorization",
      message: received,
    });
    const receiveArgs = [
      received.from,
      received.to,
      received.value,
      received.validAfter,
      received.validBefore,
      received.nonce,
      receiveSig,
    ] as const;
    await expect(
      c.simulateContract({
        account: signer("facilitator"),
        address: usdc.address,
        abi: usdcAbi,
        functionName: "receiveWithAuthorization",
        args: receiveArgs,
      }),
    ).rejects.toThrow("caller must be the payee");
    await mined(
      await payee.writeContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "receiveWithAuthorization",
        args: receiveArgs,
      }),
    );

    // cancelAuthorization: a canceled nonce can no longer be used for a transfer.
    const canceled = authorization(toHex(2, { size: 32 }));
    const cancelSig = await payer.signTypedData({
      domain: usdc.domain,
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: payer.address, nonce: canceled.nonce },
    });
    await mined(
      await payee.writeContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "cancelAuthorization",
        args: [payer.address, canceled.nonce, cancelSig],
      }),
    );
    expect(
      await c.readContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "authorizationState",
        args: [payer.address, canceled.nonce],
      }),
    ).toBe(true);

    // EIP-2612 permit with the same domain.
    const spender = byRole(devnet.accounts, "facilitator");
    const nonce = await c.readContract({
      address: usdc.address,
      abi: usdcAbi,
      functionName: "nonces",
      args: [payer.address],
    });
    const permit = { owner: payer.address, spender, value: 777n, nonce, deadline: now + 300n };
    const { v, r, s } = parseSignature(
      await payer.signTypedData({
        domain: usdc.domain,
        types: {
          Permit: [
            { name: "owner", type: "address" },
            { name: "spender", type: "address" },
            { name: "value", type: "uint256" },
            { name: "nonce", type: "uint256" },
            { name: "deadline", type: "uint256" },
          ],
        },
        primaryType: "Permit",
        message: permit,
      }),
    );
    await mined(
      await payee.writeContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "permit",
        args: [payer.address, spender, 777n, permit.deadline, Number(v), r, s],
      }),
    );
    expect(
      await c.readContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "allowance",
        args: [payer.address, spender],
      }),
    ).toBe(777n);
    expect(
      await c.readContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "balanceOf",
        args: [payer.address],
      }),
    ).toBe(1_000_000_000n - 2_000n);
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
