// Tollgate's Prometheus rules (deploy/observability/prometheus/tollgate.rules.yml) checked by the real
// promtool (Debian's `prometheus` package, installed by `pnpm test` when missing): syntax and lint, then the unit tests
// in tollgate.rules.test.yml. Also: the Kubernetes PrometheusRule is generated from this one file,
// and every alert is documented in docs/runbook.md.
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { PROMETHEUS_RULE_FILE, renderPrometheusRule } from "../../deploy/observability/prometheus-rule.ts";
import {
  alertRules,
  ROOT,
  RULES_FILE,
  RULES_TEST_FILE,
  recordingRules,
  ruleGroups,
} from "../support/observability.ts";

/** promtool's exit status and output; run without blocking the worker (a sync spawn froze it). */
const promtool = (...args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile("promtool", args, { encoding: "utf8" }, (err, stdout, stderr) =>
      resolve({ status: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
    );
  });
/**
 * `promtool test rules` is CPU-bound: each test group evaluates every rule at each minute up to its
 * last eval_time (3 h in some), about 6.5 s of CPU for the whole file. Sharing two cores with the
 * other lanes and a busy process, it once took over 60 s of wall time: its budget is sized for that
 * share, not for a quiet machine (what it asserts is promtool's verdict, never how long it took).
 */
const PROMTOOL_TEST_MS = 300_000;
const scratch = mkdtempSync(join(tmpdir(), "tollgate-rules-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("Prometheus rules (real promtool)", () => {
  it("promtool check rules accepts the rules file", async () => {
    const run = await promtool("check", "rules", RULES_FILE);
    expect(run.stderr + run.stdout).toMatch(/SUCCESS: \d+ rules found/);
    expect(run.status).toBe(0);
  });

  it(
    "promtool test rules: every unit test in tollgate.rules.test.yml passes",
    async () => {
      const run = await promtool("test", "rules", RULES_TEST_FILE);
      expect(run.stdout + run.stderr).toContain("SUCCESS");
      expect(run.status, run.stdout + run.stderr).toBe(0);
    },
    PROMTOOL_TEST_MS,
  );

  it(
    "the unit tests catch a broken alert (UpstreamDown on healthy upstreams instead)",
    async () => {
      const rules = readFileSync(RULES_FILE, "utf8");
      const broken = rules.replace(
        "expr: max by (network, upstream) (rpc_proxy_upstream_healthy) == 0\n        for: 5m",
        "expr: max by (network, upstream) (rpc_proxy_upstream_healthy) == 1\n        for: 5m",
      );
      expect(broken).not.toBe(rules);
      writeFileSync(join(scratch, "tollgate.rules.yml"), broken);
      // Only the unit tests of that alert, to keep the run short.
      const suite = parse(readFileSync(RULES_TEST_FILE, "utf8")) as { tests: Array<Record<string, unknown>> };
      suite.tests = suite.tests.filter((t) => JSON.stringify(t).includes('"TollgateUpstreamDown"'));
      expect(suite.tests.length).toBeGreaterThan(0);
      writeFileSync(join(scratch, "tollgate.rules.test.yml"), stringify(suite));
      const run = await promtool("test", "rules", join(scratch, "tollgate.rules.test.yml"));
      expect(run.status).not.toBe(0);
      expect(run.stdout + run.stderr).toContain("alertname: TollgateUpstreamDown");
    },
    PROMTOOL_TEST_MS,
  );

  it("has the alerts the operators need, each with a severity, a summary, a description and a runbook", () => {
    const names = alertRules().map((r) => r.alert);
    expect(names.sort()).toEqual(
      [
        "TollgateAvailabilityBudgetBurnFast",
        "TollgateAvailabilityBudgetBurnSlow",
        "TollgateLatencyBudgetBurnFast",
        "TollgateLatencyBudgetBurnSlow",
        "TollgateNetworkUnavailable",
        "TollgateUpstreamDown",
        "TollgateUpstreamLagging",
        "TollgateUpstreamBreakerOpen",
        "TollgateHedgeBudgetExhausted",
        "TollgateUpstreamDisagreeing",
        "TollgateUpstreamFailingIntegrity",
        "TollgateQuorumFailing",
        "TollgateQuotaFailOpen",
        "TollgateQuotaMeterUnreachable",
        "TollgateSettlementFailures",
        "TollgatePaymentFacilitatorUnavailable",
        "TollgatePaymentSettleUnanswered",
        "TollgatePaymentSettledLate",
        "TollgateSettlementsReverting",
        "TollgateEventsOutboxGrowing",
        "TollgateMeshCallsRefused",
        "TollgateBatchClaimsStalled",
        "TollgateBatchRefundGasHigh",
      ].sort(),
    );
    for (const rule of alertRules()) {
      expect(["page", "ticket", "warning"], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
      expect(rule.annotations?.runbook, rule.alert).toBe(`docs/runbook.md, ${rule.alert}`);
    }
  });

  it("every alert has a runbook entry in docs/runbook.md (meaning, first checks, fix)", () => {
    const runbook = readFileSync(join(ROOT, "docs/runbook.md"), "utf8");
    for (const rule of alertRules()) {
      const entry = new RegExp(`^\\| \`${rule.alert}\` \\|([^|\\n]+\\|){3}\\s*$`, "m");
      expect(runbook, `docs/runbook.md row for ${rule.alert}`).toMatch(entry);
    }
  });

  it("records the SLO ratios over every window the burn-rate alerts read", () => {
    const recorded = new Set(recordingRules().map((r) => r.record));
    for (const slo of ["api_availability_errors", "api_latency_slow"]) {
      for (const w of ["5m", "30m", "1h", "2h", "6h", "1d", "3d"]) {
        expect(recorded.has(`tollgate:${slo}:ratio_rate${w}`), `${slo} ${w}`).toBe(true);
      }
    }
    for (const rule of alertRules()) {
      for (const used of rule.expr.match(/tollgate:[a-z_]+:[a-z0-9_]+/g) ?? []) {
        expect(recorded.has(used), `${rule.alert} reads ${used}`).toBe(true);
      }
    }
  });
});

describe("the Kubernetes PrometheusRule", () => {
  it("is generated from the one rules file (run `pnpm gen:rules` after editing it)", () => {
    expect(readFileSync(PROMETHEUS_RULE_FILE, "utf8")).toBe(
      renderPrometheusRule(readFileSync(RULES_FILE, "utf8")),
    );
  });

  it("carries exactly the rules file's groups (parsed by kubectl)", () => {
    const rule = JSON.parse(
      execFileSync(
        "kubectl",
        [
          "patch",
          "--local",
          `--filename=${PROMETHEUS_RULE_FILE}`,
          "--type=merge",
          "--patch={}",
          "--output=json",
        ],
        { encoding: "utf8" },
      ),
    );
    expect(rule).toMatchObject({ apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule" });
    expect(rule.spec.groups).toEqual(ruleGroups());
  });
});
