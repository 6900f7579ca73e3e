// Writes the Kubernetes PrometheusRule (prometheus-rule.yaml, beside this file) from the one rules
// file, prometheus/tollgate.rules.yml, which a plain Prometheus loads as it is: `pnpm gen:rules`.
// A test renders it again and fails when the committed file differs.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const RULES_FILE = fileURLToPath(new URL("prometheus/tollgate.rules.yml", import.meta.url));
export const PROMETHEUS_RULE_FILE = fileURLToPath(new URL("prometheus-rule.yaml", import.meta.url));

const HEADER = `# GENERATED from deploy/observability/prometheus/tollgate.rules.yml by \`pnpm gen:rules\`: edit that
# file, not this one. The Prometheus Operator (kube-prometheus-stack) loads it.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: tollgate
  labels:
    # kube-prometheus-stack selects PrometheusRules by its release label: set it to your release
    # name, or match your Prometheus' ruleSelector.
    release: kube-prometheus-stack
spec:
`;

/** The rules file's \`groups:\` document (its leading comment dropped) as the PrometheusRule's spec. */
export function renderPrometheusRule(rules: string): string {
  const start = rules.search(/^groups:/m);
  if (start < 0) throw new Error("the rules file has no top-level `groups:`");
  const body = rules
    .slice(start)
    .split("\n")
    .map((line) => (line === "" ? line : `  ${line}`))
    .join("\n");
  return HEADER + body;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(PROMETHEUS_RULE_FILE, renderPrometheusRule(readFileSync(RULES_FILE, "utf8")));
  console.log(`wrote ${PROMETHEUS_RULE_FILE}`);
}
