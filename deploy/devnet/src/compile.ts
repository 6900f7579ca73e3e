// Contract artifacts: our Solidity sources compiled with solc-js (cached on disk, since loading
// and running the wasm compiler takes seconds) plus the prebuilt ENS artifacts from npm.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Abi } from "viem";
import type { Hex } from "./types.ts";

export interface Artifact {
  abi: Abi;
  bytecode: Hex;
  deployedBytecode: Hex;
}

/** Contracts compiled from ../contracts (one contract per file, named after the file). */
const SOURCE_CONTRACTS = [
  "DemoDollar",
  "DemoTokens",
  "DemoItems",
  "DemoReverter",
  "Multicall3",
  "DevUniversalResolver",
  "DemoUSDC",
  "BatchSettlement",
  "ERC3009DepositCollector",
  "ChannelReserveStandIn",
  "DemoSmartWallet",
] as const;
/** Prebuilt ENS contracts taken as-is from @ensdomains/ens and @ensdomains/resolver. */
const ENS_CONTRACTS = ["ENSRegistry", "ReverseRegistrar", "PublicResolver"] as const;

type ContractName = (typeof SOURCE_CONTRACTS)[number] | (typeof ENS_CONTRACTS)[number];
export type Artifacts = Record<ContractName, Artifact>;

const require = createRequire(import.meta.url);
const CONTRACTS_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "contracts");

const SETTINGS = {
  evmVersion: "cancun",
  optimizer: { enabled: true, runs: 200 },
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
};

const ENS_ARTIFACT_FILES: Record<(typeof ENS_CONTRACTS)[number], string> = {
  ENSRegistry: "@ensdomains/ens/build/contracts/ENSRegistry.json",
  ReverseRegistrar: "@ensdomains/ens/build/contracts/ReverseRegistrar.json",
  PublicResolver: "@ensdomains/resolver/build/contracts/PublicResolver.json",
};

function packageVersion(name: string): string {
  return (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")) as { version: string })
    .version;
}

function readSources(): Record<string, { content: string }> {
  const sources: Record<string, { content: string }> = {};
  for (const file of readdirSync(CONTRACTS_DIR).sort()) {
    if (file.endsWith(".sol")) sources[file] = { content: readFileSync(join(CONTRACTS_DIR, file), "utf8") };
  }
  return sources;
}

/** Everything that can change the output: sources, settings, compiler and dependency versions. */
function cacheKey(sources: Record<string, { content: string }>): string {
  const hash = createHash("sha256");
  hash.update(
    JSON.stringify({
      solc: packageVersion("solc"),
      openzeppelin: packageVersion("@openzeppelin/contracts"),
      ens: packageVersion("@ensdomains/ens"),
      resolver: packageVersion("@ensdomains/resolver"),
      settings: SETTINGS,
    }),
  );
  for (const [name, { content }] of Object.entries(sources)) hash.update(`\0${name}\0${content}`);
  return hash.digest("hex").slice(0, 16);
}

/** solc import callback: "@openzeppelin/..." paths come straight from node_modules. */
function findImport(path: string): { contents: string } | { error: string } {
  try {
    return { contents: readFileSync(require.resolve(path), "utf8") };
  } catch (err) {
    return { error: `cannot resolve import ${path}: ${(err as Error).message}` };
  }
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<
    string,
    Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
  >;
}

async function compileSources(sources: Record<string, { content: string }>): Promise<Artifacts> {
  const solc = (await import("solc")).default;
  const input = { language: "Solidity", sources, settings: SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join("\n")}`);

  const artifacts: Partial<Artifacts> = {};
  for (const name of SOURCE_CONTRACTS) {
    const compiled = output.contracts[`${name}.sol`]?.[name];
    if (!compiled) throw new Error(`solc output has no ${name}`);
    artifacts[name] = {
      abi: compiled.abi,
      bytecode: `0x${compiled.evm.bytecode.object}`,
      deployedBytecode: `0x${compiled.evm.deployedBytecode.object}`,
    };
  }
  for (const name of ENS_CONTRACTS) {
    const json = JSON.parse(readFileSync(require.resolve(ENS_ARTIFACT_FILES[name]), "utf8")) as Artifact;
    artifacts[name] = { abi: json.abi, bytecode: json.bytecode, deployedBytecode: json.deployedBytecode };
  }
  return artifacts as Artifacts;
}

export interface LoadedArtifacts {
  artifacts: Artifacts;
  file: string;
  cached: boolean;
  ms: number;
}

// Devnets started concurrently in one process share a single compilation.
const inFlight = new Map<string, Promise<LoadedArtifacts>>();

/** Load `<cacheDir>/artifacts-<hash>.json`, compiling and writing it first on a cache miss. */
export function loadArtifacts(cacheDir: string): Promise<LoadedArtifacts> {
  const sources = readSources();
  const file = join(cacheDir, `artifacts-${cacheKey(sources)}.json`);
  let loading = inFlight.get(file);
  if (!loading) {
    loading = loadOrCompile(file, cacheDir, sources);
    inFlight.set(file, loading);
    loading.catch(() => inFlight.delete(file));
  }
  return loading;
}

async function loadOrCompile(
  file: string,
  cacheDir: string,
  sources: Record<string, { content: string }>,
): Promise<LoadedArtifacts> {
  const started = performance.now();
  try {
    const artifacts = JSON.parse(readFileSync(file, "utf8")) as Artifacts;
    return { artifacts, file, cached: true, ms: performance.now() - started };
  } catch {
    // cache miss (or a corrupt file): compile below
  }
  const artifacts = await compileSources(sources);
  mkdirSync(cacheDir, { recursive: true });
  // Write then rename so a concurrently starting devnet never reads a half-written file.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, JSON.stringify(artifacts));
  renameSync(tmp, file);
  pruneStaleArtifacts(cacheDir, file);
  return { artifacts, file, cached: false, ms: performance.now() - started };
}

/** Drop artifact files of earlier source versions (devnets already running hold theirs in memory). */
function pruneStaleArtifacts(dir: string, keep: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (/^artifacts-[0-9a-f]{16}\.json$/.test(name) && path !== keep) rmSync(path, { force: true });
  }
}
