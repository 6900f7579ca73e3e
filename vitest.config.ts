import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One mesh (devnets + the four services as separate processes) for the suites
    // that go through the gateway; suites that need their own topology start their own.
    globalSetup: ["test/setup/global-mesh.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default"],
  },
});
