import { defineConfig } from "vitest/config";

const shared = { testTimeout: 60_000, hookTimeout: 120_000 };

export default defineConfig({
  test: {
    pool: "forks",
    maxWorkers: 2,
    projects: [
      {
        // Suites that go through the gateway share one mesh (devnets + the four
        // services as separate processes), started once for the run.
        test: {
          name: "mesh",
          include: ["test/gateway/**/*.test.ts", "test/e2e/**/*.test.ts"],
          globalSetup: ["test/setup/global-mesh.ts"],
          // One file at a time: suites assert on the mesh's own counters (no call
          // reached the node, no unit was counted), which a neighbour's traffic would blur.
          fileParallelism: false,
          sequence: { groupOrder: 0 },
          ...shared,
        },
      },
      {
        // Component suites start exactly what they test (a service, a devnet, a proxy).
        test: {
          name: "components",
          include: ["test/**/*.test.ts"],
          exclude: ["test/gateway/**", "test/e2e/**", "test/chaos/**", "**/node_modules/**"],
          sequence: { groupOrder: 0 },
          ...shared,
        },
      },
      {
        // The chaos run's CI form loads both cores for two minutes: it runs after every other
        // suite, alone, so it neither blurs their timings nor is blurred by them.
        test: {
          name: "chaos",
          include: ["test/chaos/**/*.test.ts"],
          sequence: { groupOrder: 1 },
          ...shared,
        },
      },
    ],
  },
});
