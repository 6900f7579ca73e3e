import { readFileSync } from "node:fs";
import { ENDPOINTS, ERRORS, LIMIT_ERRORS } from "@tollgate/catalog";
import { describe, expect, it } from "vitest";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("README matches behaviour", () => {
  it("lists every endpoint with the catalog's price and upstream calls, in catalog order", () => {
    const start = readme.indexOf("<!-- endpoints:start");
    const end = readme.indexOf("<!-- endpoints:end -->");
    expect(start).toBeGreaterThan(-1);
    const rows = readme
      .slice(start, end)
      .split("\n")
      .filter((l) => l.startsWith("| GET") || l.startsWith("| POST"));
    expect(rows).toEqual(ENDPOINTS.map((e) => `| ${e.method} \`${e.path}\` | ${e.price} | ${e.upstream} |`));
  });

  it("names every error code the API can answer with", () => {
    for (const code of [...Object.keys(ERRORS), ...Object.keys(LIMIT_ERRORS)]) {
      expect(readme, code).toContain(`\`${code}\``);
    }
  });

  it("stays a guide read in ten minutes: at most 450 lines (detail lives in docs/ and the service READMEs)", () => {
    expect(readme.trimEnd().split("\n").length).toBeLessThanOrEqual(450);
  });

  it("gives the two set-up commands that .ci/run runs", () => {
    const ci = readFileSync(new URL("../../.ci/run", import.meta.url), "utf8");
    const testCommand = "npx -y pnpm@10.34.9 install --frozen-lockfile && npx -y pnpm@10.34.9 test";
    expect(ci).toContain(testCommand);
    expect(readme).toContain(testCommand);
    expect(readme).toContain("npx -y pnpm@10.34.9 install --frozen-lockfile && npx -y pnpm@10.34.9 start");
  });
});
