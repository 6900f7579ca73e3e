import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startMesh } from "@tollgate/local";
import type { TestProject } from "vitest/node";
import { TEST_MESH_ENV } from "../support/own-mesh.ts";
import { createTestDatabase } from "../support/postgres.ts";

interface MeshInfo {
  gatewayUrl: string;
  dashboardUrl: string;
  devnetFile: string;
  operatorToken: string;
  quotaMeterAddr: string;
  settlementWorkerAddr: string;
  /** This mesh's database on the machine's PostgreSQL. */
  databaseUrl: string;
  metricsUrls: Record<string, string>;
  stateDir: string;
  /** Prefix of this mesh's NATS subjects and streams (see startMesh's namespace). */
  eventsNamespace: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    mesh: MeshInfo;
  }
}

/** Starts the shared mesh once for the whole run and tears it down after. */
export default async function setup(project: TestProject) {
  const stateDir = mkdtempSync(join(tmpdir(), "tollgate-test-"));
  const namespace = `t${process.pid}`;
  const lines: string[] = [];
  // The mesh's records live in a database of its own on the machine's PostgreSQL, dropped after.
  const database = await createTestDatabase(namespace);
  const mesh = await startMesh({
    stateDir,
    namespace,
    env: {
      ...TEST_MESH_ENV,
      LOG_LEVEL: process.env.MESH_LOG_LEVEL ?? "warn",
      // Suites sign up several wallets from 127.0.0.1; the sign-up limit has a test of its own.
      SIGN_UPS_PER_HOUR: "1000",
      DATABASE_URL: database.url,
    },
    onLine: (service, line) => {
      lines.push(`[${service}] ${line}`);
      // Errors always (a service's unhandled error is the cause a failing test needs in CI's log).
      if (process.env.MESH_LOGS || /"level":(50|60)/.test(line))
        process.stderr.write(`[${service}] ${line}\n`);
    },
  });
  if (!mesh.devnet) throw new Error("the test mesh must run on the devnet");
  project.provide("mesh", {
    gatewayUrl: mesh.gatewayUrl,
    dashboardUrl: mesh.dashboardUrl,
    devnetFile: mesh.devnet.file,
    operatorToken: readFileSync(mesh.operatorTokenFile, "utf8").trim(),
    quotaMeterAddr: `127.0.0.1:${mesh.ports["quota-meter"].main}`,
    settlementWorkerAddr: `127.0.0.1:${mesh.ports["settlement-worker"].main}`,
    databaseUrl: database.url,
    metricsUrls: Object.fromEntries(
      Object.entries(mesh.ports).map(([name, p]) => [name, `http://127.0.0.1:${p.metrics}/metrics`]),
    ),
    stateDir,
    eventsNamespace: namespace,
  });
  return async () => {
    await mesh.stop();
    await database.drop();
    rmSync(stateDir, { recursive: true, force: true });
  };
}
