// The mesh credentials of suites that start services in-process: a gateway token made for
// this test process, and the configuration a service needs to accept it.
import { generateMeshToken, type MeshCallers, meshCallerEnv, meshTokenDigest } from "@tollgate/platform";

/** The token test clients present as the gateway. */
export const GATEWAY_TOKEN = generateMeshToken();

/** What a service started by a suite accepts: the gateway, by its token's digest. */
export const MESH_CALLERS: MeshCallers = { gateway: [meshTokenDigest(GATEWAY_TOKEN)] };

/** The same, as the environment a service process reads it from. */
export const MESH_CALLERS_ENV: Record<string, string> = {
  [meshCallerEnv("gateway")]: meshTokenDigest(GATEWAY_TOKEN),
};

/**
 * Runs `fn` (a service's synchronous loadConfig) with `vars` set in the environment, then
 * puts the environment back, so defaults come from the real reader without leaking test
 * values into the processes a suite spawns later.
 */
export function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  set(vars);
  try {
    return fn();
  } finally {
    set(saved);
  }
}
