// The keyed call of the endpoint suites (endpoints.test.ts, endpoints-defaults.test.ts): one account
// per file, each answer checked for its envelope and quota headers, and what the file's calls
// served and metered, for endpoints.test.ts's coverage check.
import { type EndpointId, endpointById } from "@tollgate/catalog";
import type request from "supertest";
import { beforeAll, expect } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { type ChainRequest, urlOf } from "../support/devnet.ts";
import { get, post } from "../support/gateway.ts";
import { SUITE_BURST } from "../support/quota.ts";

let apiKey: string;
export const served = new Set<string>();
export let metered = 0;

/** Opens the account whose key every call of the file is made with (before the file's tests). */
export function useSuiteKey() {
  beforeAll(async () => {
    // The mesh lane runs its files in one worker (isolate: false), where this module may outlive a
    // file: each file counts only its own calls.
    served.clear();
    metered = 0;
    ({ apiKey } = await createAccountWithKey({ burst: SUITE_BURST }));
  });
}

/** Calls one catalog endpoint with the key; checks the envelope and the key's quota headers. */
export async function call(id: EndpointId, req: ChainRequest): Promise<request.Response> {
  const endpoint = endpointById(id);
  if (!endpoint) throw new Error(`no endpoint ${id}`);
  const url = urlOf(endpoint.path, req);
  const headers = { Authorization: `Bearer ${apiKey}` };
  const res = endpoint.method === "GET" ? await get(url, headers) : await post(url, req.body ?? {}, headers);
  expect(res.body.meta).toMatchObject({ endpoint: endpoint.path, request_id: expect.any(String) });
  // The quota headers come in pairs; a pair is absent only while the metering store is
  // briefly out of reach (spec 8.3), which a loaded machine can cause.
  expect(res.headers["x-quota-day-limit"] === undefined).toBe(res.headers["x-quota-day-used"] === undefined);
  if (res.headers["x-quota-day-used"] !== undefined) {
    expect(res.headers["x-quota-day-limit"]).toBe("200000");
    expect(res.headers["x-quota-day-used"]).toMatch(/^[1-9][0-9]*$/);
    metered++;
  }
  if (res.status === 200) {
    expect(res.body.error).toBeNull();
    served.add(endpoint.path);
  } else {
    expect(res.body.data).toBeNull();
  }
  return res;
}

export const ok = async (id: EndpointId, req: ChainRequest) => {
  const res = await call(id, req);
  expect(res.status, JSON.stringify(res.body.error)).toBe(200);
  return res.body.data;
};
