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
  // Where local state lives: .tollgate in the repository unless TOLLGATE_STATE_DIR says (a test's
  // own folder, so it never touches the developer's chains and database).
  stateDir: process.env.TOLLGATE_STATE_DIR || undefined,
  log: (line) => logger.info(line),
  onLine: (_service, line) => process.stdout.write(`${line}\n`),
}).catch((err: Error) => {
  // The service's own lines above say why (a taken port names its holder): no launcher stack.
  logger.fatal(err.message.split("\n")[0] ?? "the mesh did not start");
  process.exit(1);
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
