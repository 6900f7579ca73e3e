import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { get, metricSum, post } from "../support/gateway.ts";

let apiKey: string;
const bearer = () => ({ Authorization: `Bearer ${apiKey}` });

beforeAll(async () => {
  ({ apiKey } = await createAccountWithKey());
});

describe("gateway foundation: envelope, request ids, auth decision", () => {
  it("serves chain-id on sepolia with an API key, in the spec's exact envelope", async () => {
    const res = await get("/api/chain/chain-id?network=sepolia", bearer());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: { chain_id: "0xaa36a7", network: "sepolia" },
      error: null,
      meta: { endpoint: "/api/chain/chain-id", request_id: expect.any(String) },
    });
    expect(res.headers["x-request-id"]).toBe(res.body.meta.request_id);
  });

  it("defaults to ethereum and answers a hex block number", async () => {
    const chain = await get("/api/chain/chain-id", bearer());
    expect(chain.body.data).toEqual({ chain_id: "0x1", network: "ethereum" });
    const block = await get("/api/chain/block-number", bearer());
    expect(block.status).toBe(200);
    expect(block.body.data.block_number).toMatch(/^0x[0-9a-f]+$/);
    expect(block.body.data.network).toBe("ethereum");
  });

  it("answers 402 without credentials and 401 with a wrong key, both enveloped", async () => {
    const none = await get("/api/chain/chain-id");
    expect(none.status).toBe(402);
    expect(none.body).toMatchObject({ data: null, error: { code: "payment_required" } });
    expect(none.body.meta.endpoint).toBe("/api/chain/chain-id");

    const wrong = await get("/api/chain/chain-id", { Authorization: "Bearer tg_live_not-a-real-key" });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ data: null, error: { code: "invalid_api_key" } });

    const malformed = await get("/api/chain/chain-id", { Authorization: "Basic dXNlcjpwYXNz" });
    expect(malformed.status).toBe(401);
    expect(malformed.body.error.code).toBe("invalid_api_key");
  });

  it("refuses an unknown network with 400 naming the parameter and the allowed values", async () => {
    const res = await get("/api/chain/chain-id?network=goerli", bearer());
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "invalid_parameter", parameter: "network" });
    expect(res.body.error.message).toContain("ethereum");
    expect(res.body.error.message).toContain("sepolia");
  });

  it("gives every request its own id, never the client's X-Request-Id (clients retry with the same one)", async () => {
    const a = await get("/api/chain/chain-id");
    const b = await get("/api/chain/chain-id");
    expect(a.body.meta.request_id).not.toBe(b.body.meta.request_id);
    const trace = { "X-Request-Id": "client-trace-12345678" };
    const first = await get("/api/chain/chain-id", trace);
    const retried = await get("/api/chain/chain-id", trace);
    for (const res of [first, retried]) {
      expect(res.body.meta.request_id).not.toBe("client-trace-12345678");
      expect(res.headers["x-request-id"]).toBe(res.body.meta.request_id);
    }
    expect(first.body.meta.request_id).not.toBe(retried.body.meta.request_id);
  });

  it("envelopes unknown routes (404), wrong methods (405), malformed JSON (400) and oversized bodies (413)", async () => {
    const unknown = await get("/api/chain/nope");
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ data: null, error: { code: "not_found" } });
    expect(unknown.body.meta.request_id).toEqual(expect.any(String));

    const wrongMethod = await post("/api/chain/chain-id", {});
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe("GET");
    expect(wrongMethod.body.error.code).toBe("method_not_allowed");

    const malformed = await post("/api/chain/call", "{not json", bearer());
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatchObject({ code: "invalid_body", parameter: "body" });

    const huge = await post(
      "/api/chain/call",
      { to: `0x${"1".repeat(40)}`, data: `0x${"ab".repeat(200_000)}` },
      bearer(),
    );
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe("payload_too_large");
  });

  it("answers /health from the gateway alone", async () => {
    const res = await get("/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
  });

  it("shows the calls made here in every service's /metrics", async () => {
    const before = await metricSum("rpc-proxy", "grpc_server_handling_seconds_count", {
      grpc_method: "Execute",
    });
    await get("/api/chain/block-number", bearer());
    expect(
      await metricSum("gateway", "http_request_duration_seconds_count", {
        endpoint: "/api/chain/block-number",
      }),
    ).toBeGreaterThan(0);
    expect(
      await metricSum("rpc-proxy", "grpc_server_handling_seconds_count", { grpc_method: "Execute" }),
    ).toBeGreaterThan(before);
    expect(
      await metricSum("quota-meter", "grpc_server_handling_seconds_count", { grpc_method: "Authorize" }),
    ).toBeGreaterThan(0);
    expect(
      await metricSum("payment-verifier", "grpc_server_handling_seconds_count", { grpc_method: "Challenge" }),
    ).toBeGreaterThan(0);
    for (const service of ["gateway", "rpc-proxy", "quota-meter", "payment-verifier"]) {
      expect(await metricSum(service, "process_cpu_seconds_total")).toBeGreaterThan(0);
    }
  });
});
