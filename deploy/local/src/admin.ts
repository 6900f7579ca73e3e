import { readFileSync } from "node:fs";
import { type AdminClient, createAdminClient } from "@tollgate/cli/clients/quota-admin";
import type { Mesh } from "./mesh.ts";

/** The operator's admin client for a running mesh (its quota-meter and operator token). */
export function meshAdmin(mesh: Pick<Mesh, "ports" | "operatorTokenFile">): AdminClient {
  const token = readFileSync(mesh.operatorTokenFile, "utf8").trim();
  return createAdminClient(`127.0.0.1:${mesh.ports["quota-meter"].main}`, token);
}
