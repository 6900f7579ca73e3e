// Thin JSON-RPC helper for seeding: anvil's unlocked dev accounts sign (eth_sendTransaction), and
// with automine every transaction gets its own block, so each receipt is ready when the call returns.
import { type Abi, decodeFunctionResult, encodeDeployData, encodeFunctionData, getAddress } from "viem";
import type { Artifact } from "./compile.ts";
import type { Address, Hex } from "./types.ts";

interface RawReceipt {
  status: Hex;
  blockNumber: Hex;
  transactionHash: Hex;
  contractAddress: Address | null;
  logs: { address: Address; topics: Hex[]; data: Hex; logIndex: Hex }[];
}

export interface SentTx {
  txHash: Hex;
  blockNumber: number;
  contractAddress: Address | null;
  logs: RawReceipt["logs"];
}

export class ChainRpc {
  readonly rpcUrl: string;
  private nextId = 1;

  constructor(rpcUrl: string) {
    this.rpcUrl = rpcUrl;
  }

  async request<T>(method: string, params: unknown[] = []): Promise<T> {
    const res = await fetch(this.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: this.nextId++, method, params }),
    });
    const body = (await res.json()) as {
      result?: T;
      error?: { code: number; message: string; data?: unknown };
    };
    if (body.error)
      throw new Error(`${method}: ${body.error.message} ${JSON.stringify(body.error.data ?? "")}`);
    return body.result as T;
  }

  /** Send from an unlocked dev account and return the mined receipt (throws if it reverted). */
  async send(from: Address, tx: { to?: Address; data?: Hex; value?: bigint }): Promise<SentTx> {
    const txHash = await this.request<Hex>("eth_sendTransaction", [
      {
        from,
        ...(tx.to ? { to: tx.to } : {}),
        ...(tx.data ? { data: tx.data } : {}),
        ...(tx.value ? { value: `0x${tx.value.toString(16)}` } : {}),
      },
    ]);
    let receipt: RawReceipt | null = null;
    for (let attempt = 0; attempt < 50 && !receipt; attempt++) {
      receipt = await this.request<RawReceipt | null>("eth_getTransactionReceipt", [txHash]);
      if (!receipt) await new Promise((r) => setTimeout(r, 20));
    }
    if (!receipt) throw new Error(`no receipt for ${txHash}`);
    if (receipt.status !== "0x1") throw new Error(`transaction ${txHash} reverted`);
    return {
      txHash,
      blockNumber: Number(receipt.blockNumber),
      contractAddress: receipt.contractAddress ? getAddress(receipt.contractAddress) : null,
      logs: receipt.logs,
    };
  }

  async deploy(from: Address, artifact: Artifact, args: unknown[] = []): Promise<Address> {
    const data = encodeDeployData({ abi: artifact.abi, bytecode: artifact.bytecode, args });
    const { contractAddress } = await this.send(from, { data });
    if (!contractAddress) throw new Error("deployment returned no contract address");
    return contractAddress;
  }

  async write(
    from: Address,
    to: Address,
    abi: Abi,
    functionName: string,
    args: unknown[] = [],
    value?: bigint,
  ): Promise<SentTx> {
    return this.send(from, { to, data: encodeFunctionData({ abi, functionName, args }), value });
  }

  async read<T>(to: Address, abi: Abi, functionName: string, args: unknown[] = []): Promise<T> {
    const data = encodeFunctionData({ abi, functionName, args });
    const result = await this.request<Hex>("eth_call", [{ to, data }, "latest"]);
    return decodeFunctionResult({ abi, functionName, args, data: result }) as T;
  }

  async blockNumber(): Promise<number> {
    return Number(await this.request<Hex>("eth_blockNumber"));
  }

  /** Put `runtimeCode` at a fixed address (how canonical predeploys such as Multicall3 get there). */
  async setCode(address: Address, runtimeCode: Hex): Promise<void> {
    await this.request("anvil_setCode", [address, runtimeCode]);
  }

  async getCode(address: Address): Promise<Hex> {
    return this.request<Hex>("eth_getCode", [address, "latest"]);
  }
}
