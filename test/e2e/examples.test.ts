// The examples as a reader runs them (`pnpm example:…`), on the shared mesh: each must exit 0 and
// print what its comment promises. Only `example:viem` is run here so far.
import { readDevnetFile } from "@tollgate/devnet";
import { createPublicClient, erc20Abi, http } from "viem";
import { describe, expect, it } from "vitest";
import { mesh } from "../support/gateway.ts";
import { runProcess } from "../support/run-process.ts";

const devnet = readDevnetFile(mesh.devnetFile);
const node = createPublicClient({ transport: http(devnet.chains.ethereum?.rpcUrl) });

describe("examples", () => {
  it("example:viem reads through /rpc/ethereum with a key, then pays per call with @x402/fetch", async () => {
    const run = await runProcess(process.execPath, ["examples/viem.ts"], {
      cwd: new URL("../", import.meta.url).pathname,
      env: {
        PATH: process.env.PATH,
        GATEWAY_URL: mesh.gatewayUrl,
        DEVNET_FILE: mesh.devnetFile,
        OPERATOR_TOKEN: mesh.operatorToken,
        QUOTA_METER_ADDR: mesh.quotaMeterAddr,
      },
    });
    expect(run.code, run.stderr).toBe(0);
    const line = (name: string) => run.stdout.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
    const head = await node.getBlockNumber({ cacheTime: 0 });
    const token = devnet.demo.ethereum.erc20;
    const holder = devnet.accounts.find((a) => a.role === "A")?.address ?? "0x";
    const symbol = await node.readContract({ address: token.address, abi: erc20Abi, functionName: "symbol" });
    expect(line("getBlockNumber")).toBe(`getBlockNumber ${head}n`);
    expect(line("readContract")).toBe(`readContract ${symbol} ${token.balances[holder]}n`);
    expect(line("multicall")).toMatch(/^multicall \[ '.+', \d+, \d+n \]$/);
    expect(line("getLogs")).toMatch(/^getLogs [1-9]\d* Transfer events$/);
    expect(line("paid getBlockNumber")).toBe(`paid getBlockNumber ${head}n`);
    expect(run.stdout.match(/ {2}paid, transaction 0x[0-9a-f]{64}/g)).toHaveLength(2);
  });
});
