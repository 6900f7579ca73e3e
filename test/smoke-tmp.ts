import { startMesh } from "@tollgate/local";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const stateDir = mkdtempSync(join(tmpdir(), "dash-smoke-"));
const mesh = await startMesh({ stateDir, namespace: `dsmoke${process.pid}`, env: { DATABASE_URL: process.env.DATABASE_URL!, LOG_LEVEL: "info" }, onLine: (s, l) => { if (s === "dashboard" || /error|fatal/i.test(l)) console.log(`[${s}] ${l.slice(0, 300)}`); } });
console.log("READY", mesh.dashboardUrl, mesh.gatewayUrl);
process.on("SIGTERM", async () => { await mesh.stop(); process.exit(0); });
setInterval(() => {}, 1e6);
