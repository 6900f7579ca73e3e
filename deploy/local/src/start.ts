import { enableCompileCache } from "node:module";
import { join } from "node:path";
import { REPO_ROOT } from "./services.ts";

/**
 * `pnpm start`: the whole mesh on loopback. Service logs go to stdout, one JSON line
 * each; the launcher's own lines are plain text. Ctrl-C stops everything it started.
 */
// Where local state lives: .tollgate in the repository unless TOLLGATE_STATE_DIR says (a test's
// own folder, so it never touches the developer's chains and database).
const stateDir = process.env.TOLLGATE_STATE_DIR || join(REPO_ROOT, ".tollgate");
// V8's compiled code of every module the launcher and the services load, kept across restarts (keyed
// by each file's contents, so an edited file is compiled again): a start then compiles only what
// changed. The launcher's own modules are imported below, once it is on.
const compileCache = join(stateDir, "compile-cache");
enableCompileCache(compileCache);
const { createLogger, readSecret, redactUrl } = await import("@tollgate/platform");
const { startMesh } = await import("./mesh.ts");

const logger = createLogger("launcher");
// Read as a secret, so no line the launcher prints can carry its password.
readSecret("DATABASE_URL");
const mesh = await startMesh({
  defaultPorts: true,
  stateDir,
  env: { NODE_COMPILE_CACHE: compileCache },
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
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
logger.info(
  `ready ${seconds(performance.now())} after launch (each part ready at: ${Object.entries(mesh.timings)
    .map(([part, ms]) => `${part} ${seconds(ms)}`)
    .join(", ")})`,
);
logger.info(`gateway listening on ${mesh.gatewayUrl}; try ${mesh.gatewayUrl}/llms.txt`);
logger.info(`dashboard: ${mesh.dashboardUrl} (sign in with a wallet, create API keys, see usage)`);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    const stopAt = performance.now();
    logger.info("stopping the mesh");
    await mesh.stop();
    logger.info(`stopped in ${seconds(performance.now() - stopAt)}`);
    process.exit(0);
  });
}
