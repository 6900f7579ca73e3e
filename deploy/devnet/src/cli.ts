// Manual runs: `pnpm --filter @tollgate/devnet start` (or `node deploy/devnet/src/cli.ts`).
// Starts the devnet, prints where devnet.json is, and keeps the chains up until Ctrl-C.
import { parseArgs } from "node:util";
import { startDevnet } from "./index.ts";

const { values } = parseArgs({
  options: {
    "state-dir": { type: "string" },
    "third-network": { type: "string" },
    host: { type: "string" },
    quiet: { type: "boolean", short: "q" },
  },
});

const devnet = await startDevnet({
  stateDir: values["state-dir"],
  thirdNetworkName: values["third-network"],
  host: values.host,
  log: values.quiet ? undefined : (line) => console.error(`[devnet] ${line}`),
});

for (const chain of Object.values(devnet.chains)) {
  console.error(`  ${chain.name.padEnd(11)} chain ${String(chain.chainId).padEnd(9)} ${chain.rpcUrl}`);
}
console.log(devnet.file);
console.error("Ctrl-C to stop");

// The anvil children are unref'd (so tests can't hang on them); keep this process alive explicitly.
const keepAlive = setInterval(() => {}, 1 << 30);
const shutdown = async (): Promise<void> => {
  clearInterval(keepAlive);
  await devnet.stop();
  process.exit(0);
};
process.once("SIGINT", shutdown);
process.once("SIGTERM", shutdown);
