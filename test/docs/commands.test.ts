// Every `pnpm …` command the READMEs give must run as written: scripts that exist, files that
// exist, vitest projects and test paths that exist (and belong to the project named).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const PROJECTS: Record<string, (path: string) => boolean> = {
  mesh: (p) => p.startsWith("test/gateway") || p.startsWith("test/e2e"),
  components: (p) =>
    p.startsWith("test/") &&
    !p.startsWith("test/gateway") &&
    !p.startsWith("test/e2e") &&
    p !== "test/chaos/chaos.test.ts",
  chaos: (p) => p === "test/chaos/chaos.test.ts",
};
const PNPM_BUILTINS = new Set(["exec", "install", "add", "i", "dlx", "--filter"]);

function readmes(): string[] {
  const found = ["README.md", "k8s/README.md"];
  for (const dir of ["services", "libs", "deploy", "tools"]) {
    for (const entry of readdirSync(join(ROOT, dir))) {
      const file = join(dir, entry, "README.md");
      if (existsSync(join(ROOT, file))) found.push(file);
    }
  }
  return found;
}

/** `pnpm …` commands in inline code and in code blocks (a trailing `# comment` dropped). */
function commands(text: string): string[] {
  const blocks = [...text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split("\n"));
  const inline = [...text.replace(/```[\s\S]*?```/g, "").matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  return [...blocks, ...inline]
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line.startsWith("pnpm "));
}

const rootScripts = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts as Record<
  string,
  string
>;

function problems(command: string): string[] {
  const args = command.split(/\s+/).slice(1);
  const [first, ...rest] = args;
  if (first === "exec" && rest[0] === "vitest") {
    const out: string[] = [];
    const project = rest[rest.indexOf("--project") + 1];
    if (rest.includes("--project") && !PROJECTS[project!]) out.push(`no vitest project ${project}`);
    if (rest.includes("--config")) out.push("--config: the root vitest.config.ts is the only one");
    const paths = rest.filter((a, i) => i > 1 && !a.startsWith("-") && rest[i - 1] !== "--project");
    for (const p of paths) {
      if (!existsSync(join(ROOT, p))) out.push(`${p} does not exist`);
      else if (project && PROJECTS[project] && !PROJECTS[project](p))
        out.push(`${p} is not in project ${project}`);
    }
    return out;
  }
  if (first === "exec" && rest[0] === "node") {
    return existsSync(join(ROOT, rest[1]!)) ? [] : [`${rest[1]} does not exist`];
  }
  if (first === "--filter") {
    const pkg = rest[0]!;
    const script = rest[1]!;
    const manifests = ["services", "libs", "deploy", "tools"].flatMap((d) =>
      readdirSync(join(ROOT, d)).map((e) => join(ROOT, d, e, "package.json")),
    );
    const found = [...manifests, join(ROOT, "test", "package.json")]
      .filter(existsSync)
      .map((f) => JSON.parse(readFileSync(f, "utf8")))
      .find((m) => m.name === pkg);
    return found?.scripts?.[script] ? [] : [`${pkg} has no script ${script}`];
  }
  if (PNPM_BUILTINS.has(first!)) return [];
  return rootScripts[first!] ? [] : [`no root script ${first}`];
}

describe("README commands", () => {
  it.each(readmes())("%s: every pnpm command runs as written", (file) => {
    const found = commands(readFileSync(join(ROOT, file), "utf8"));
    const broken = found.flatMap((c) => problems(c).map((p) => `${c}: ${p}`));
    expect(broken, relative(ROOT, join(ROOT, file))).toEqual([]);
  });

  it("finds the test commands it checks", () => {
    const all = readmes().flatMap((f) => commands(readFileSync(join(ROOT, f), "utf8")));
    expect(all.filter((c) => c.startsWith("pnpm exec vitest run")).length).toBeGreaterThanOrEqual(5);
    expect(problems("pnpm exec vitest run --config test/quota-meter/vitest.config.ts")).not.toEqual([]);
    expect(problems("pnpm exec vitest run --project mesh test/quota-meter")).not.toEqual([]);
  });
});
