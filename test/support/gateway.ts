import request from "supertest";
import { inject } from "vitest";
import { assertConforms } from "./openapi.ts";

export const mesh = inject("mesh");

type Res = request.Response;

/**
 * Calls the shared mesh's gateway over real HTTP and checks the answer against the
 * gateway's own /openapi.json, so every response in the suite validates its docs.
 */
export async function get(path: string, headers: Record<string, string> = {}): Promise<Res> {
  const res = await request(mesh.gatewayUrl).get(path).set(headers);
  await assertConforms("get", path, res);
  return res;
}

export async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Res> {
  const res = await request(mesh.gatewayUrl)
    .post(path)
    .set({ "Content-Type": "application/json", ...headers })
    .send(typeof body === "string" ? body : JSON.stringify(body));
  await assertConforms("post", path, res);
  return res;
}

/** Reads one service's Prometheus text and sums the samples of `metric` matching all `labels`. */
export async function metricSum(service: string, metric: string, labels: Record<string, string> = {}) {
  const url = mesh.metricsUrls[service];
  if (!url) throw new Error(`no metrics url for ${service}`);
  return metricSumAt(url, metric, labels);
}

/** The same, for the /metrics at `url` (a service of a suite's own mesh). */
export async function metricSumAt(url: string, metric: string, labels: Record<string, string> = {}) {
  const text = await (await fetch(url)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${metric}{`) && !line.startsWith(`${metric} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return sum;
}

/** quota-meter's calls of `method` so far in a suite's own mesh (an Authorize: a lease grant or a per-call grant). */
export const quotaMeterCalls = (
  own: { ports: Record<"quota-meter", { metrics: number }> },
  method: "Authorize" | "GetUsage" = "Authorize",
) =>
  metricSumAt(
    `http://127.0.0.1:${own.ports["quota-meter"].metrics}/metrics`,
    "grpc_server_handling_seconds_count",
    { grpc_method: method },
  );

/**
 * Releases payment-verifier has answered so far in a suite's own mesh: the gateway sends one, after
 * its answer, for a paid call that got no answer (the payment, a channel's voucher, is then free).
 */
export const paymentReleases = (own: { ports: Record<"payment-verifier", { metrics: number }> }) =>
  metricSumAt(
    `http://127.0.0.1:${own.ports["payment-verifier"].metrics}/metrics`,
    "grpc_server_handling_seconds_count",
    { grpc_method: "Release" },
  );
