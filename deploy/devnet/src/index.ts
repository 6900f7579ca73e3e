// @tollgate/devnet: five local anvil chains with deterministic demo contracts and history.
//   ethereum (1) and sepolia (11155111): ERC-20/721/1155, reverter, ENS, Multicall3
//   <thirdNetworkName> (4663): Multicall3 only
//   settlement (84532): USDC-like EIP-3009 token for x402, Multicall3, batch-settlement escrow
//   tempo (4217): anvil's Tempo mode for MPP: pathUSD, USDC.e, channel reserve stand-in + RPC shim
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEV_MNEMONIC, devAccounts } from "./accounts.ts";
import { type AnvilNode, startAnvil } from "./anvil.ts";
import { ChainRpc } from "./chain.ts";
import { loadArtifacts } from "./compile.ts";
import { ENS_UNIVERSAL_RESOLVER, MULTICALL3_ADDRESS, placeMulticall3 } from "./predeploys.ts";
import { seedDemoChain } from "./seed.ts";
import { SETTLEMENT_CHAIN_ID, setupSettlement } from "./settlement.ts";
import { setupTempo, TEMPO_ANVIL_ARGS, TEMPO_CHAIN_ID } from "./tempo.ts";
import type { TempoShim } from "./tempo-shim.ts";
import type { DemoState, Devnet, DevnetAccount, DevnetChain, StartDevnetOptions } from "./types.ts";

export { byRole } from "./accounts.ts";
export { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from "./batch-settlement.ts";
export { TEMPO_ADDRESSES } from "./tempo.ts";
export type * from "./types.ts";

const THIRD_CHAIN_ID = 0x1237; // 4663
export const DEFAULT_STATE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", ".tollgate");

/** Contents of devnet.json. */
export interface DevnetFile {
  version: 1;
  /** Process that started the devnet; its anvils die with it. */
  pid: number;
  startedAt: string;
  mnemonic: string;
  chains: Record<string, DevnetChain>;
  accounts: DevnetAccount[];
  demo: DemoState;
}

/** Read a devnet.json written by startDevnet (default: <repo>/.tollgate/devnet.json). */
export function readDevnetFile(file = join(DEFAULT_STATE_DIR, "devnet.json")): DevnetFile {
  return JSON.parse(readFileSync(file, "utf8")) as DevnetFile;
}

export async function startDevnet(opts: StartDevnetOptions = {}): Promise<Devnet> {
  const started = performance.now();
  const log = opts.log ?? (() => {});
  const stateDir = resolve(opts.stateDir ?? DEFAULT_STATE_DIR);
  const host = opts.host ?? "127.0.0.1";
  const third = opts.thirdNetworkName ?? "tollnet";
  if (["ethereum", "sepolia", "settlement", "tempo"].includes(third))
    throw new Error(`thirdNetworkName "${third}" is taken`);

  const specs: { name: string; chainId: number; extraArgs?: string[] }[] = [
    { name: "ethereum", chainId: 1 },
    { name: "sepolia", chainId: 11155111 },
    { name: third, chainId: THIRD_CHAIN_ID },
    { name: "settlement", chainId: SETTLEMENT_CHAIN_ID },
    { name: "tempo", chainId: TEMPO_CHAIN_ID, extraArgs: TEMPO_ANVIL_ARGS },
  ];
  const accounts = devAccounts();

  // Compile (or load the cache) while the anvils boot.
  const [loaded, ...boots] = await Promise.allSettled([
    loadArtifacts(resolve(opts.cacheDir ?? DEFAULT_STATE_DIR)),
    ...specs.map((spec) =>
      startAnvil({
        chainId: spec.chainId,
        host,
        accounts: accounts.length,
        log,
        extraArgs: spec.extraArgs,
        quiet: opts.quiet,
      }),
    ),
  ]);
  const nodes = boots.flatMap((b) => (b.status === "fulfilled" ? [b.value as AnvilNode] : []));
  let stopped: Promise<void> | undefined;
  let tempoShim: TempoShim | undefined;
  const stop = (): Promise<void> => {
    stopped ??= Promise.all([...nodes.map((node) => node.stop()), tempoShim?.stop()]).then(() =>
      log("devnet stopped"),
    );
    return stopped;
  };

  try {
    const failed = [loaded, ...boots].find((r) => r.status === "rejected");
    if (failed?.status === "rejected") throw failed.reason;
    if (loaded?.status !== "fulfilled") throw new Error("unreachable");
    const { artifacts } = loaded.value;
    log(
      `artifacts ${loaded.value.cached ? "loaded from cache" : "compiled"} in ${Math.round(loaded.value.ms)} ms`,
    );

    const [ethNode, sepoliaNode, thirdNode, settlementNode, tempoNode] = nodes as [
      AnvilNode,
      AnvilNode,
      AnvilNode,
      AnvilNode,
      AnvilNode,
    ];
    const [ethereum, sepolia, , settlement, tempo] = await Promise.all([
      seedDemoChain(new ChainRpc(ethNode.rpcUrl), artifacts, accounts, 1, ENS_UNIVERSAL_RESOLVER.ethereum),
      seedDemoChain(
        new ChainRpc(sepoliaNode.rpcUrl),
        artifacts,
        accounts,
        11155111,
        ENS_UNIVERSAL_RESOLVER.sepolia,
      ),
      placeMulticall3(new ChainRpc(thirdNode.rpcUrl), artifacts),
      setupSettlement(new ChainRpc(settlementNode.rpcUrl), artifacts, accounts),
      setupTempo(tempoNode, artifacts, accounts, log).then((setUp) => {
        tempoShim = setUp.shim; // stopped with the devnet even if another chain's setup fails
        return setUp;
      }),
    ]);
    const demo: DemoState = {
      ethereum,
      sepolia,
      settlement,
      tempo: tempo.demo,
      multicall3: MULTICALL3_ADDRESS,
    };

    const demoContracts = (d: typeof ethereum) => ({
      erc20: d.erc20.address,
      erc721: d.erc721.address,
      erc1155: d.erc1155.address,
      reverter: d.reverter.address,
      ensRegistry: d.ens.registry,
      ensPublicResolver: d.ens.publicResolver,
      ensReverseRegistrar: d.ens.reverseRegistrar,
      ensUniversalResolver: d.ens.universalResolver,
      multicall3: d.multicall3,
    });
    const contracts: Record<string, Record<string, `0x${string}`>> = {
      ethereum: demoContracts(ethereum),
      sepolia: demoContracts(sepolia),
      [third]: { multicall3: MULTICALL3_ADDRESS },
      settlement: {
        usdc: settlement.usdc.address,
        multicall3: settlement.multicall3,
        batchSettlement: settlement.batchSettlement,
        erc3009Collector: settlement.erc3009Collector,
      },
      tempo: {
        pathUsd: tempo.demo.pathUsd.address,
        usdce: tempo.demo.usdce.address,
        channelReserve: tempo.demo.channelReserve.address,
        feeManager: tempo.demo.feeManager,
      },
    };
    const chains: Record<string, DevnetChain> = {};
    specs.forEach((spec, i) => {
      const node = nodes[i] as AnvilNode;
      chains[spec.name] = {
        name: spec.name,
        chainId: spec.chainId,
        rpcUrl: node.rpcUrl,
        port: node.port,
        contracts: contracts[spec.name] ?? {},
      };
    });
    // Servers must go through the shim (it seeds channel opens); anvil's own URL stays available.
    chains.tempo = {
      ...(chains.tempo as DevnetChain),
      rpcUrl: tempo.shim.url,
      port: tempo.shim.port,
      anvilRpcUrl: tempoNode.rpcUrl,
    };

    const file = resolve(opts.file ?? join(stateDir, "devnet.json"));
    const content: DevnetFile = {
      version: 1,
      pid: process.pid,
      startedAt: new Date().toISOString(),
      mnemonic: DEV_MNEMONIC,
      chains,
      accounts,
      demo,
    };
    writeJsonAtomic(file, content);
    log(`devnet ready in ${Math.round(performance.now() - started)} ms: ${file}`);
    return { chains, accounts, demo, file, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Write then rename, so readers (other processes polling the file) never see half a file. */
function writeJsonAtomic(file: string, value: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(tmp, file);
}
