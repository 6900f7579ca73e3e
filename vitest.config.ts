import { defineConfig } from "vitest/config";
import CostShardSequencer from "./test/setup/sequencer.ts";

const shared = { testTimeout: 60_000, hookTimeout: 120_000 };

// `pnpm test` runs the two default projects side by side, as three vitest processes (test/run.ts):
// the component suites, and the mesh suites in two shards, each shard on a devnet and shared mesh of
// its own, one file at a time.
export default defineConfig({
  test: {
    pool: "forks",
    maxWorkers: 2,
    // The mesh shards split by cost (test/setup/sequencer.ts).
    sequence: { sequencer: CostShardSequencer },
    projects: [
      {
        // Suites that go through the gateway: the shared mesh (devnets + the six services as
        // separate processes, started once per vitest process), or a mesh of their own on its devnets.
        test: {
          name: "mesh",
          include: ["test/gateway/**/*.test.ts", "test/e2e/**/*.test.ts"],
          globalSetup: ["test/setup/global-mesh.ts"],
          // One file at a time: suites assert on the shared mesh's own counters (no call reached
          // the node, no unit was counted), and meshes of their own pay from the shared devnet's
          // accounts; a neighbour's traffic would blur both.
          fileParallelism: false,
          // One worker for every file: viem, the x402 and MPP clients and the gRPC stubs are
          // loaded once, not once per file. Each file starts and stops what it owns.
          isolate: false,
          // One worker, so a group of its own: a plain `vitest run` (all projects in one process)
          // runs it after the components.
          sequence: { groupOrder: 1 },
          ...shared,
        },
      },
      {
        // Component suites start exactly what they test (a service, a devnet, a proxy).
        test: {
          name: "components",
          include: ["test/**/*.test.ts"],
          exclude: [
            "test/gateway/**",
            "test/e2e/**",
            "test/images/**",
            "test/chaos/chaos.test.ts",
            "test/chaos/cluster.test.ts",
            "**/node_modules/**",
          ],
          // The store contract suites' Redis Cluster (6 nodes on loopback), once for the run.
          globalSetup: ["test/setup/redis-cluster.ts"],
          // Files of a worker share its module graph: viem, mppx, the x402 clients and the gRPC stubs
          // are evaluated once per worker, not once per file (isolated, the lane spent most of its
          // wall time importing). Each file starts and stops what it owns, as in the mesh project.
          isolate: false,
          ...shared,
        },
      },
      {
        // `pnpm test:images` (test/images/run.ts) starts the mesh from the service images and runs
        // this project against it: its own suites, and test/e2e's examples and dashboard sign-in.
        test: {
          name: "images",
          include: [
            "test/images/**/*.test.ts",
            "test/e2e/examples.test.ts",
            "test/e2e/dashboard-browser.test.ts",
          ],
          globalSetup: ["test/images/provide-mesh.ts"],
          fileParallelism: false,
          isolate: false,
          sequence: { groupOrder: 3 },
          ...shared,
        },
      },
      {
        // The chaos run's CI form loads both cores for two minutes through every fault: its own
        // command (`pnpm test:chaos`, which .ci/run also runs), alone, so it blurs no other timing.
        test: {
          name: "chaos",
          // With the cluster run (a Redis Cluster and a NATS cluster, issue 43), one file after the other.
          include: ["test/chaos/chaos.test.ts", "test/chaos/cluster.test.ts"],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
          ...shared,
        },
      },
    ],
  },
});
