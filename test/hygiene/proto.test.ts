// The compatibility check of the internal contracts (`pnpm check:proto`): `buf breaking` against
// proto/released.binpb, the image of the protos as last released (recorded by `pnpm proto:release`).
// An image file rather than a git ref, so the check works in any clone, shallow or not.
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const BUF = join(ROOT, "node_modules", ".bin", "buf");
const RELEASED = join(ROOT, "proto", "released.binpb");
const breaking = (dir: string) =>
  spawnSync(BUF, ["breaking", dir, "--against", RELEASED], { encoding: "utf8" });

const scratch = mkdtempSync(join(tmpdir(), "tollgate-proto-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("proto compatibility with the last release (buf breaking)", () => {
  it("accepts the contracts as they are", () => {
    const run = breaking(join(ROOT, "proto"));
    expect(run.stdout + run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("accepts an added field and refuses a removed one", () => {
    const copy = join(scratch, "proto");
    cpSync(join(ROOT, "proto"), copy, { recursive: true });
    const file = join(copy, "tollgate", "rpc", "v1", "rpc_proxy.proto");
    const source = readFileSync(file, "utf8");

    const added = source.replace(/^message ListNetworksRequest \{/m, "$&\n  string added_later = 99;");
    expect(added).not.toBe(source);
    writeFileSync(file, added);
    expect(breaking(copy).status).toBe(0);

    const removed = source.replace(/^(message ExecuteRequest \{[^}]*?)\n\s*string network = \d+;/m, "$1");
    expect(removed).not.toBe(source);
    writeFileSync(file, removed);
    const run = breaking(copy);
    expect(run.status).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/ExecuteRequest.*network|network.*ExecuteRequest/);
  });
});
