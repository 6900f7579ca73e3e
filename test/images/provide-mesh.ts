// The images project's global setup: the mesh `pnpm test:images` (test/images/run.ts) started from
// the images, handed to the suites as the shared mesh (the same `mesh` the mesh project provides),
// so test/e2e's examples and dashboard suites run unchanged against the containers.
import { readFileSync } from "node:fs";
import type { TestProject } from "vitest/node";

export default function setup(project: TestProject) {
  const file = process.env.TOLLGATE_IMAGES_MESH;
  if (!file)
    throw new Error("the images project runs under `pnpm test:images` (TOLLGATE_IMAGES_MESH is unset)");
  project.provide("mesh", JSON.parse(readFileSync(file, "utf8")).mesh);
}
