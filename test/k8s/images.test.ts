// The images and the manifests agree (drift, read from the files): the user the image runs as is the
// one every manifest requires, the directories the manifests make writable are the ones the image
// prepares for that user, the files the services read beside their sources survive the image's
// pruning, and the environment the image sets is declared by each service. `pnpm test:images` then
// runs every image as its manifest says (test/images) and proves the rest live: ports, health
// probes, NODE_OPTIONS, memory limits, the read-only root filesystem.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { SERVICES as IMAGE_SERVICES } from "../../deploy/docker/images.ts";
import { ENV_TABLES } from "../../deploy/env/tables.ts";
import {
  containerOf,
  deployments,
  envValue,
  named,
  ROOT,
  renders,
  SERVICE_NAMES,
  UID,
  useRenders,
} from "./manifests.support.ts";

useRenders();

const dockerfile = readFileSync(join(ROOT, "deploy", "docker", "Dockerfile"), "utf8");
const stages = dockerfile.split(/^FROM /m).slice(1);
const runtime = stages.at(-1) ?? "";
const files = stages.find((s) => /^\S+ AS files$/m.test(s)) ?? "";

/** What the files stage deletes from libs/, services/ and proto/ (the `find … -name` patterns). */
const pruned = [...files.matchAll(/-name '([^']+)'/g)]
  .map((m) => m[1] ?? "")
  .filter((p) => p !== "node_modules");
const prunedDirs = [...files.matchAll(/rm -rf ([^\n&]+)/g)].flatMap((m) => (m[1] ?? "").trim().split(/\s+/));
const isPruned = (path: string) =>
  pruned.some((p) => (p.startsWith("*") ? path.endsWith(p.slice(1)) : path.endsWith(`/${p}`))) ||
  prunedDirs.some((d) => path === d || path.startsWith(`${d}/`));

/** Every `new URL("<relative>", import.meta.url)` in the services' and libs' sources. */
function filesReadBesideSources(): { source: string; target: string }[] {
  const found: { source: string; target: string }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (entry === "node_modules" || entry === "dist") continue;
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith(".ts") && !path.endsWith(".test.ts")) {
        for (const m of readFileSync(path, "utf8").matchAll(
          /new URL\(["`]([^"`$]+)[^)]*import\.meta\.url/g,
        )) {
          found.push({
            source: relative(ROOT, path),
            target: relative(ROOT, join(dirname(path), m[1] ?? "")),
          });
        }
      }
    }
  };
  for (const top of ["libs", "services"]) {
    for (const pkg of readdirSync(join(ROOT, top))) walk(join(ROOT, top, pkg, "src"));
  }
  return found;
}

describe("the images and the manifests agree", () => {
  it("builds the six services the manifests deploy", () => {
    expect([...IMAGE_SERVICES].sort()).toEqual([...SERVICE_NAMES].sort());
  });

  it("runs as the user, group and fsGroup every manifest requires", () => {
    expect(runtime).toMatch(new RegExp(`^USER ${UID}:${UID}$`, "m"));
    for (const name of SERVICE_NAMES) {
      const workload = named(deployments(renders().base), name);
      const pod = workload.spec?.template.spec?.securityContext;
      expect([pod?.runAsUser, pod?.runAsGroup, pod?.fsGroup], name).toEqual([UID, UID, UID]);
      const c = containerOf(workload);
      expect([c.securityContext?.runAsUser, c.securityContext?.runAsGroup], name).toEqual([UID, UID]);
    }
  });

  it("prepares the outbox the manifests point OUTBOX_DIR at, owned by that user", () => {
    for (const name of SERVICE_NAMES) {
      const outbox = envValue(containerOf(named(deployments(renders().base), name)), "OUTBOX_DIR");
      if (!outbox) continue;
      expect(outbox, name).toBe("/var/lib/tollgate/outbox");
      expect(files).toContain(`mkdir -p /out${outbox}`);
      expect(files).toContain(`chown -R ${UID}:${UID} /out/var/lib/tollgate`);
    }
  });

  it("keeps every file the services read beside their sources (proto/, migrations, Lua, pages)", () => {
    const read = filesReadBesideSources().filter(({ source }) => !source.includes("migrate-command"));
    expect(read.map((r) => r.source)).toEqual(
      expect.arrayContaining(["libs/platform/src/grpc-contracts.ts", "services/dashboard/src/server.ts"]),
    );
    for (const { source, target } of read) {
      // A template (`./${name}.lua`): the folder, and the files of that kind in it.
      const isFolder = statSync(join(ROOT, target), { throwIfNoEntry: false })?.isDirectory() ?? true;
      const folder = isFolder ? target.replace(/\/\.?$/, "") : dirname(target);
      const kept = readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => relative(ROOT, join(e.parentPath, e.name)))
        .filter((p) => !p.endsWith(".ts") && !isPruned(p));
      expect(kept.length, `${source} reads ${target}: nothing of it is left in the image`).toBeGreaterThan(0);
      // In a folder the files stage copies: proto/, libs/, the service's own folder.
      expect(folder, source).toMatch(/^(proto|libs\/[^/]+|services\/[^/]+)(\/|$)/);
    }
  });

  it("sets only environment every service declares, with the manifests' values", () => {
    const env = Object.fromEntries(
      [...(/^ENV ([\s\S]+?)\n(?!\s)/m.exec(runtime)?.[1] ?? "").matchAll(/(\w+)=(\S+)/g)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    expect(Object.keys(env).sort()).toEqual(["BIND_HOST", "NODE_ENV"]);
    for (const name of SERVICE_NAMES) {
      expect(
        ENV_TABLES[name]?.some((v) => v.name === "BIND_HOST"),
        name,
      ).toBe(true);
      const c = containerOf(named(deployments(renders().base), name));
      expect(envValue(c, "BIND_HOST"), name).toBe(env.BIND_HOST);
    }
  });
});
