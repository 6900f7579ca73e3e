// The dashboards and rules in deploy/observability, read the way Grafana and Prometheus read them:
// shared by the rule, dashboard and real-Prometheus suites.
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parse } from "yaml";

export const ROOT = resolve(import.meta.dirname, "../..");
const OBSERVABILITY = join(ROOT, "deploy", "observability");
const DASHBOARDS_DIR = join(OBSERVABILITY, "dashboards");
export const RULES_FILE = join(OBSERVABILITY, "prometheus", "tollgate.rules.yml");
export const RULES_TEST_FILE = join(OBSERVABILITY, "prometheus", "tollgate.rules.test.yml");

interface Target {
  refId: string;
  expr: string;
}
export interface Panel {
  type: string;
  id: number;
  title?: string;
  description?: string;
  datasource?: { type?: string; uid?: string };
  gridPos?: { h: number; w: number; x: number; y: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  type: string;
  name: string;
  query?: string;
  allValue?: string;
  includeAll?: boolean;
}
export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
}

export interface DashboardFile {
  file: string;
  text: string;
  dashboard: Dashboard;
}

export function dashboardFiles(): DashboardFile[] {
  return readdirSync(DASHBOARDS_DIR)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((file) => {
      const text = readFileSync(join(DASHBOARDS_DIR, file), "utf8");
      return { file, text, dashboard: JSON.parse(text) as Dashboard };
    });
}

/** Every panel, rows' children included. */
export function panelsOf(d: Dashboard): Panel[] {
  return d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

export interface PanelQuery {
  dashboard: string;
  panel: string;
  refId: string;
  expr: string;
}

export function panelQueries(d: Dashboard): PanelQuery[] {
  return panelsOf(d).flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      dashboard: d.uid,
      panel: p.title ?? String(p.id),
      refId: t.refId,
      expr: t.expr,
    })),
  );
}

/**
 * Grafana's global variables, as Grafana would fill them for a short time range: $__rate_interval
 * is at least four scrape intervals (the suites scrape every second).
 */
export const GLOBAL_VARIABLES: Record<string, string> = {
  __rate_interval: "1m",
  __interval: "15s",
  __range: "1h",
};

/** Variable names an expression uses ($name or ${name}). */
export function variablesIn(expr: string): string[] {
  return [...expr.matchAll(/\$(?:\{(\w+)(?::\w+)?\}|(\w+))/g)].map((m) => (m[1] ?? m[2])!);
}

/** The expression as Grafana sends it with every multi-value variable set to "All". */
export function substitute(expr: string, d: Dashboard): string {
  return expr.replace(/\$(?:\{(\w+)(?::\w+)?\}|(\w+))/g, (whole, braced: string, bare: string) => {
    const name = braced ?? bare;
    if (name in GLOBAL_VARIABLES) return GLOBAL_VARIABLES[name]!;
    const v = d.templating.list.find((x) => x.name === name);
    if (!v?.allValue) throw new Error(`${d.uid}: ${whole} has no "All" value to substitute`);
    return v.allValue;
  });
}

const FUNCTIONS = new Set([
  "sum",
  "max",
  "min",
  "avg",
  "count",
  "rate",
  "increase",
  "deriv",
  "min_over_time",
  "max_over_time",
  "histogram_quantile",
  "time",
  "vector",
  "label_values",
  "abs",
  "clamp_min",
]);
const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "e", "inf", "nan"]);

/**
 * Metric names an expression reads: identifiers left once strings, label matchers, ranges, offsets,
 * grouping clauses, functions and keywords are taken out. Unknown functions show up as names,
 * so the list above must grow with the queries (a test then fails, never passes wrongly).
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, "")
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b\d+(?:ms|[smhdwy])\b/g, "")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "");
  const names = new Set<string>();
  for (const [token] of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    if (!FUNCTIONS.has(token) && !KEYWORDS.has(token.toLowerCase())) names.add(token);
  }
  return [...names];
}

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface RuleGroup {
  name: string;
  rules: Rule[];
}

export function ruleGroups(text = readFileSync(RULES_FILE, "utf8")): RuleGroup[] {
  return (parse(text) as { groups: RuleGroup[] }).groups;
}

export const allRules = () => ruleGroups().flatMap((g) => g.rules);
export const alertRules = () => allRules().filter((r) => r.alert);
export const recordingRules = () => allRules().filter((r) => r.record);
