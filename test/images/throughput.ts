// Throughput inside the limits (issue 42): the same load on the API-key block-number path, first
// against the mesh from the images (each container at its manifest's memory and CPU limits), then
// against a mesh of the same services as processes running their bundles with the manifests'
// NODE_OPTIONS and no limit. Both in one run of `pnpm test:images`, so the ratio compares like
// with like on whatever the machine is doing at the time.
import { type Mesh, meshAdmin, type ServiceName, startMesh } from "@tollgate/local";
import { load } from "../bench/loader.ts";
import { buildBundles } from "../support/bundles.ts";
import { manifestNodeOptions, POD_SERVICES } from "../support/pod-limits.ts";

const CONNECTIONS = 32;
const SECONDS = 10;

/** Requests per second served on the API-key block-number path, after a short warm-up. */
export async function apiKeyThroughput(mesh: Mesh, name: string): Promise<number> {
  const admin = meshAdmin(mesh);
  // Uncapped windows and a burst guard above the load: this measures serving, not refusing.
  const { secret } = await admin.quickstart(name, { daily: 0, monthly: 0, burst: 1_000_000 });
  admin.close();
  const call = {
    url: `${mesh.gatewayUrl}/api/chain/block-number`,
    headers: { authorization: `Bearer ${secret}` },
    connections: CONNECTIONS,
  };
  await load({ ...call, duration: 2 });
  const result = await load({ ...call, duration: SECONDS });
  if (result.errors || result.non2xx)
    throw new Error(`load on ${name}: ${result.errors} errors, ${result.non2xx} non-2xx answers`);
  return result.requests.average;
}

/** The same services from their bundles, as processes with their manifests' NODE_OPTIONS. */
export async function startBundlesMesh(opts: {
  stateDir: string;
  namespace: string;
  env: Record<string, string>;
}): Promise<Mesh> {
  buildBundles();
  return startMesh({
    stateDir: opts.stateDir,
    namespace: opts.namespace,
    env: opts.env,
    bundles: true,
    serviceEnv: Object.fromEntries(
      POD_SERVICES.map((s): [ServiceName, Record<string, string>] => [
        s,
        { NODE_OPTIONS: manifestNodeOptions(s) ?? "" },
      ]),
    ),
  });
}
