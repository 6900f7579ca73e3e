// One environment table per service (services/<name>/src/env.ts): its README table is the rendering of
// it, and its loader reads nothing outside it.
import { readFileSync } from "node:fs";
import { envTable } from "@tollgate/platform";
import { describe, expect, it } from "vitest";
import { ENV_TABLES, readmePath, renderedReadme } from "../../deploy/env/tables.ts";
import { withEnv } from "../support/mesh.ts";

describe("environment tables", () => {
  it.each(Object.keys(ENV_TABLES))(
    "%s: the README's table is the service's table (run `pnpm gen:env`)",
    (service) => {
      expect(readFileSync(readmePath(service), "utf8")).toBe(renderedReadme(service));
    },
  );

  it.each(Object.keys(ENV_TABLES))(
    "%s: every variable is described, and a required one has no default",
    (service) => {
      for (const v of ENV_TABLES[service]!) {
        expect(v.description.length, v.name).toBeGreaterThan(10);
        if (v.required) expect(v.default, `${v.name} is required and has a default`).toBeUndefined();
      }
    },
  );

  it("reads defaults from the table, refuses a bad integer naming the variable, and only names in the table", () => {
    const env = envTable([
      { name: "WIDGETS", default: "3", description: "how many widgets there are" },
      { name: "SECRET_THING", secret: true, description: "a secret, also from SECRET_THING_FILE" },
    ]);
    expect(withEnv({ WIDGETS: undefined }, () => env.int("WIDGETS"))).toBe(3);
    expect(withEnv({ WIDGETS: "12" }, () => env.int("WIDGETS"))).toBe(12);
    expect(() => withEnv({ WIDGETS: "many" }, () => env.int("WIDGETS"))).toThrow(
      'WIDGETS must be a non-negative integer, got "many"',
    );
    expect(withEnv({ SECRET_THING: "s3cret" }, () => env.secret("SECRET_THING"))).toBe("s3cret");
    // A name outside the table is a type error; at run time it throws too.
    expect(() => (env.string as (name: string) => string)("OTHER")).toThrow(
      /not in this service's environment table/,
    );
  });
});
