// The gateway serves API-key chain GETs in a fast lane without Express (routes/fast-lane.ts) and
// every other request through Express. A client must not be able to tell which lane answered.
import { request as httpRequest } from "node:http";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { get, mesh, metricSum } from "../support/gateway.ts";

let apiKey: string;

beforeAll(async () => {
  ({ apiKey } = await createAccountWithKey());
});

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A GET as a raw HTTP request, its target sent as written. */
function rawGet(path: string, headers: Record<string, string>): Promise<Raw> {
  const { hostname, port } = new URL(mesh.gatewayUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, path, method: "GET", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** The headers a client can tell lanes apart by: all but the ones that differ per answer. */
const PER_ANSWER = new Set([
  "date",
  "x-request-id",
  "x-quota-day-used",
  "x-quota-month-used",
  "content-length",
]);
const shape = (r: Raw) =>
  Object.fromEntries(
    Object.entries(r.headers)
      .filter(([name]) => !PER_ANSWER.has(name))
      .sort(([a], [b]) => a.localeCompare(b)),
  );

describe("the gateway's fast lane for API-key calls", () => {
  it("answers an API-key call exactly as the Express lane does: same status, headers and envelope", async () => {
    const bearer = { Authorization: `Bearer ${apiKey}`, Connection: "keep-alive" };
    const fast = await rawGet("/api/chain/chain-id?network=sepolia", bearer);
    // A target with a fragment is not the fast lane's (Express's URL parser strips it): Express serves it.
    const viaExpress = await rawGet("/api/chain/chain-id?network=sepolia#express", bearer);
    expect(fast.status).toBe(200);
    expect(viaExpress.status).toBe(200);
    expect(shape(fast)).toEqual(shape(viaExpress));
    expect(fast.headers["access-control-expose-headers"]).toContain("X-Quota-Day-Used");
    expect(fast.headers["cache-control"]).toBe("no-store");
    const a = JSON.parse(fast.body);
    const b = JSON.parse(viaExpress.body);
    expect(a.meta.request_id).toBe(fast.headers["x-request-id"]);
    expect({ ...a, meta: { ...a.meta, request_id: "" } }).toEqual({
      ...b,
      meta: { ...b.meta, request_id: "" },
    });
    expect(Number(viaExpress.headers["x-quota-day-used"])).toBe(Number(fast.headers["x-quota-day-used"]) + 1);
  });

  it("refuses bad input in the envelope naming the parameter, as Express does", async () => {
    const bearer = { Authorization: `Bearer ${apiKey}` };
    const badNetwork = await get("/api/chain/block-number?network=goerli", bearer);
    expect(badNetwork.status).toBe(400);
    expect(badNetwork.body.error).toMatchObject({ code: "invalid_parameter", parameter: "network" });
    expect(badNetwork.body.meta.endpoint).toBe("/api/chain/block-number");
    // An undecodable path parameter is left to Express, which names it.
    const undecodable = await get("/api/chain/balance/0x%E0%A4%A", bearer);
    expect(undecodable.status).toBe(400);
    expect(undecodable.body.error).toMatchObject({ code: "invalid_parameter", parameter: "address" });
    // A trailing slash is not the route: the 404 with its hint, never served.
    const slash = await get("/api/chain/block-number/", bearer);
    expect(slash.status).toBe(404);
  });

  it("counts each call it serves once in the request metrics, labelled by template and auth", async () => {
    const labels = { endpoint: "/api/chain/network-info", auth: "api_key", status: "200" };
    const before = await metricSum("gateway", "http_request_duration_seconds_count", labels);
    for (let i = 0; i < 3; i++) {
      const res = await get("/api/chain/network-info", { Authorization: `Bearer ${apiKey}` });
      expect(res.status).toBe(200);
    }
    const after = await metricSum("gateway", "http_request_duration_seconds_count", labels);
    expect(after - before).toBe(3);
  });
});
