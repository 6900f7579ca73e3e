// The Grafana dashboards in deploy/observability/dashboards, checked without a Grafana server
// (none can run here): each validates against the dashboard schema Grafana publishes, transcribed
// in grafana-dashboard.schema.json beside this file, and keeps the invariants Grafana relies on
// beyond the schema. Whether every query returns data is proven against a real Prometheus in
// test/e2e/prometheus.test.ts.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import {
  dashboardFiles,
  GLOBAL_VARIABLES,
  panelQueries,
  panelsOf,
  substitute,
  variablesIn,
} from "../support/observability.ts";

const schema = JSON.parse(readFileSync(join(import.meta.dirname, "grafana-dashboard.schema.json"), "utf8"));
const validate = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(schema);
const files = dashboardFiles();
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, literally.
const DATASOURCE = "${datasource}";

describe("Grafana dashboards (no Grafana server here: Grafana's published dashboard schema, transcribed, and its invariants)", () => {
  it("ships the overview, upstreams, mesh and process dashboards", () => {
    expect(files.map((f) => f.file)).toEqual([
      "mesh.json",
      "overview.json",
      "process.json",
      "upstreams.json",
    ]);
  });

  it.each(files.map((f) => [f.file, f] as const))(
    "%s validates against Grafana's dashboard schema",
    (_, f) => {
      const ok = validate(f.dashboard);
      expect(validate.errors ?? [], f.file).toEqual([]);
      expect(ok).toBe(true);
    },
  );

  it("rejects what Grafana's schema rejects (the check can fail)", () => {
    const d = structuredClone(files[0]!.dashboard) as unknown as Record<string, unknown>;
    expect(validate({ ...d, style: "dark" }), "unknown top-level field").toBe(false);
    const { templating: _t, ...withoutTemplating } = d;
    expect(validate(withoutTemplating), "templating is required").toBe(false);
    const panels = structuredClone(d.panels) as Array<Record<string, unknown>>;
    panels[1] = { ...panels[1], gridPos: { h: 8, w: 25, x: 0, y: 0 } };
    expect(validate({ ...d, panels }), "a panel wider than the grid").toBe(false);
  });

  it("gives every dashboard its own uid and title, and every panel an id unique in its dashboard", () => {
    const uids = files.map((f) => f.dashboard.uid);
    expect(new Set(uids).size).toBe(uids.length);
    expect(new Set(files.map((f) => f.dashboard.title)).size).toBe(files.length);
    for (const { file, dashboard } of files) {
      expect(dashboard.uid, file).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
      const ids = panelsOf(dashboard).map((p) => p.id);
      expect(new Set(ids).size, `${file}: panel ids`).toBe(ids.length);
    }
  });

  it("lays panels out on the 24-column grid without overlaps", () => {
    for (const { file, dashboard } of files) {
      const boxes = panelsOf(dashboard).map((p) => ({ title: p.title, ...p.gridPos! }));
      for (const b of boxes) expect(b.x + b.w, `${file}: ${b.title}`).toBeLessThanOrEqual(24);
      for (const [i, a] of boxes.entries()) {
        for (const b of boxes.slice(i + 1)) {
          const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
          expect(overlap, `${file}: "${a.title}" overlaps "${b.title}"`).toBe(false);
        }
      }
    }
  });

  it("reads every query panel from the dashboard's Prometheus datasource variable, with a title and a description", () => {
    for (const { file, dashboard } of files) {
      const ds = dashboard.templating.list.find((v) => v.type === "datasource");
      expect(ds, `${file} has a datasource variable`).toMatchObject({
        name: "datasource",
        query: "prometheus",
      });
      for (const p of panelsOf(dashboard).filter((p) => p.type !== "row")) {
        expect(p.datasource, `${file}: ${p.title}`).toEqual({ type: "prometheus", uid: DATASOURCE });
        expect(p.title, `${file}: panel ${p.id}`).toBeTruthy();
        expect(p.description, `${file}: ${p.title}`).toBeTruthy();
        expect(p.targets?.length, `${file}: ${p.title} has queries`).toBeGreaterThan(0);
      }
    }
  });

  it("uses only variables the dashboard defines (or Grafana's globals) and distinct refIds per panel", () => {
    for (const { file, dashboard } of files) {
      const defined = new Set([
        ...dashboard.templating.list.map((v) => v.name),
        ...Object.keys(GLOBAL_VARIABLES),
      ]);
      for (const q of panelQueries(dashboard)) {
        for (const name of variablesIn(q.expr))
          expect(defined.has(name), `${file}: ${q.panel}: $${name}`).toBe(true);
        expect(() => substitute(q.expr, dashboard), `${file}: ${q.panel}`).not.toThrow();
      }
      for (const p of panelsOf(dashboard)) {
        const refs = (p.targets ?? []).map((t) => t.refId);
        expect(new Set(refs).size, `${file}: ${p.title}`).toBe(refs.length);
      }
      for (const v of dashboard.templating.list.filter((v) => v.type === "query")) {
        expect(v.query, `${file}: $${v.name}`).toMatch(/^label_values\(\w+, \w+\)$/);
      }
    }
  });
});
