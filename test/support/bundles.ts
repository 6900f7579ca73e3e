// The services' bundles (`pnpm build`, tools/build/bundle.ts), built from the sources at hand: what
// a run that starts the mesh as the images run it (`startMesh({ bundles: true })`) must do first.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const BUILD = fileURLToPath(new URL("../../tools/build/bundle.ts", import.meta.url));

export function buildBundles(): void {
  const built = spawnSync(process.execPath, [BUILD], { stdio: ["ignore", "inherit", "inherit"] });
  if (built.status !== 0) throw new Error("pnpm build failed");
}
