// A suite's mesh of its own, on the machine's PostgreSQL: `startMesh` as `pnpm start` runs it would
// start an embedded PGlite per mesh (~4 CPU-seconds and ~450 MB each), which the suite does not test.
// A suite that does test the embedded database passes `DATABASE_URL: ""` and gets it.
import { type Mesh, type MeshOptions, startMesh } from "@tollgate/local";
import { createTestDatabase } from "./postgres.ts";

/**
 * What every test mesh runs with unless its suite says otherwise: the suite shares two cores with
 * Redis, NATS, anvil and other lanes, so the metering round trip gets room and tests see metering,
 * not the fail-open path (served, not counted: a count read after it is short by the calls it served).
 */
export const TEST_MESH_ENV = { REDIS_BUDGET_MS: "2000" };

/** startMesh with a database of its own on the machine's server, dropped when the mesh stops. */
export async function startOwnMesh(given: MeshOptions): Promise<Mesh> {
  const opts = { ...given, env: { ...TEST_MESH_ENV, ...given.env } };
  if (given.env?.DATABASE_URL !== undefined) return startMesh(opts);
  const database = await createTestDatabase(opts.namespace ?? "mesh");
  let mesh: Mesh;
  try {
    mesh = await startMesh({ ...opts, env: { ...opts.env, DATABASE_URL: database.url } });
  } catch (err) {
    await database.drop();
    throw err;
  }
  const stop = mesh.stop.bind(mesh);
  return Object.assign(mesh, {
    stop: async () => {
      try {
        await stop();
      } finally {
        await database.drop();
      }
    },
  });
}
