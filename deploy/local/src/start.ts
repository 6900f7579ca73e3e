import { createLogger, readSecret, redactUrl } from "@tollgate/platform";
import { startMesh } from "./mesh.ts";

/**
 * `pnpm start`: the whole mesh on loopback. Service logs go to stdout, one JSON line
 * each; the launcher's own lines are plain text. Ctrl-C stops everything it started.
 */
const logger = createLogger("launcher");
// Read as a secret, so no line the launcher prints can carry its password.
readSecret("DATABASE_URL");
const mesh = await startMesh({
  defaultPorts: true,
  log: (line) => logger.info(line),
  onLine: (_service, line) => process.stdout.write(`${line}\n`),
});
if (mesh.devnet) logger.info(`devnet: ${mesh.devnet.file}`);
logger.info(
  mesh.postgres
    ? `PostgreSQL: embedded PGlite at ${redactUrl(mesh.databaseUrl)}, data in ${mesh.stateDir}/pglite`
    : `PostgreSQL: ${redactUrl(mesh.databaseUrl)} (DATABASE_URL)`,
);
logger.info(`operator token: ${mesh.operatorTokenFile} (used by \`pnpm tollgate\`)`);
logger.info(`gateway listening on ${mesh.gatewayUrl}; try ${mesh.gatewayUrl}/llms.txt`);
logger.info(`dashboard: ${mesh.dashboardUrl} (sign in with a wallet, create API keys, see usage)`);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    logger.info("stopping the mesh");
    await mesh.stop();
    process.exit(0);
  });
}
