// Every service's environment table (services/<name>/src/env.ts) and the README table rendered from it.
// `pnpm gen:env` rewrites the READMEs; test/docs/env-tables.test.ts fails when one drifts, and
// test/k8s checks the manifests against the same tables.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type EnvVar, withEnvTable } from "../../libs/platform/src/env-table.ts";
import { ENV as dashboard } from "../../services/dashboard/src/env.ts";
import { ENV as gateway } from "../../services/gateway/src/env.ts";
import { ENV as paymentVerifier } from "../../services/payment-verifier/src/env.ts";
import { ENV as quotaMeter } from "../../services/quota-meter/src/env.ts";
import { ENV as rpcProxy } from "../../services/rpc-proxy/src/env.ts";
import { ENV as settlementWorker } from "../../services/settlement-worker/src/env.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export const ENV_TABLES: Record<string, readonly EnvVar[]> = {
  gateway: gateway.vars,
  "quota-meter": quotaMeter.vars,
  "payment-verifier": paymentVerifier.vars,
  "rpc-proxy": rpcProxy.vars,
  "settlement-worker": settlementWorker.vars,
  dashboard: dashboard.vars,
};

export function readmePath(service: string): string {
  return join(ROOT, "services", service, "README.md");
}

/** The service's README with its environment table as the table renders. */
export function renderedReadme(service: string): string {
  const vars = ENV_TABLES[service];
  if (!vars) throw new Error(`no environment table for ${service}`);
  return withEnvTable(readFileSync(readmePath(service), "utf8"), vars);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const service of Object.keys(ENV_TABLES)) writeFileSync(readmePath(service), renderedReadme(service));
}
