import { connect } from "node:net";
import request from "supertest";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, updateAccount } from "../support/accounts.ts";
import { devnet } from "../support/devnet.ts";
import { get, mesh, metricSum, post } from "../support/gateway.ts";
import { countedToday, dayUsed, SUITE_BURST } from "../support/quota.ts";

// The edges a new user meets first: how the key is written, methods and paths that are not
// quite an endpoint, requests Node's parser refuses, block tags in log ranges, and the
// usage endpoint. Each answer the gateway controls is enveloped and carries X-Request-Id;
// none is served, counted or charged on a path or method the API does not list.

let apiKey: string;
const bearer = () => ({ Authorization: `Bearer ${apiKey}` });
const executes = () =>
  metricSum("rpc-proxy", "grpc_server_handling_seconds_count", { grpc_method: "Execute" });

beforeAll(async () => {
  ({ apiKey } = await createAccountWithKey({ burst: SUITE_BURST }));
});

/** Checks the envelope of an error the gateway answered, and that its id is the header's. */
function enveloped(res: request.Response, status: number, code: string, endpoint: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({ data: null, error: { code, message: expect.any(String) } });
  expect(res.body.meta).toEqual({ endpoint, request_id: res.headers["x-request-id"] });
  expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
}

/** Sends raw bytes to the gateway and returns the raw answer (for what supertest cannot send). */
function raw(bytes: string): Promise<string> {
  const { hostname, port } = new URL(mesh.gatewayUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk.toString("latin1");
    });
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
    socket.write(bytes, "latin1");
  });
}

function parseRaw(answer: string) {
  const [head = "", body = ""] = answer.split("\r\n\r\n");
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  return { status: Number(statusLine.split(" ")[1]), headers, body: JSON.parse(body) };
}

describe("the Authorization header (RFC 9110: the scheme is case-insensitive)", () => {
  it("accepts bearer in any case, with the spaces and surrounding whitespace the RFC allows", async () => {
    const { apiKey: key } = await createAccountWithKey({ burst: SUITE_BURST });
    const forms = [`bearer ${key}`, `BEARER ${key}`, `bEaReR ${key}`, `Bearer   ${key}`, `  Bearer ${key}  `];
    for (const [i, authorization] of forms.entries()) {
      const res = await get("/api/chain/chain-id", { Authorization: authorization });
      expect(res.status, authorization).toBe(200);
      expect(res.headers["x-quota-day-used"]).toBe(String(i + 1));
    }
    const usage = await get("/api/account/usage?days=1", { Authorization: `bearer ${key}` });
    expect(usage.status).toBe(200);
    // Still refused: another scheme, or no key after the scheme.
    for (const authorization of [`Basic ${key}`, "bearer", `Bearer${key}`]) {
      const res = await get("/api/chain/chain-id", { Authorization: authorization });
      enveloped(res, 401, "invalid_api_key", "/api/chain/chain-id");
    }
  });
});

describe("methods and paths the API does not list", () => {
  it("HEAD on an /api/ endpoint is 405 with Allow naming its one method: never served, counted or charged", async () => {
    const before = await dayUsed(apiKey);
    const calls = await executes();
    for (const [path, method] of [
      ["/api/chain/chain-id", "GET"],
      ["/api/chain/block/latest", "GET"],
      ["/api/chain/call", "POST"],
      ["/api/pricing", "GET"],
      ["/api/account/usage", "GET"],
    ] as const) {
      const res = await request(mesh.gatewayUrl).head(path).set(bearer());
      expect(res.status, path).toBe(405);
      expect(res.headers.allow).toBe(method);
      expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.headers["x-quota-day-used"]).toBeUndefined();
    }
    expect(await executes()).toBe(calls);
    expect(await dayUsed(apiKey)).toBe(before + 1);
    // The documents outside /api/ keep HEAD (probes and caches use it).
    expect((await request(mesh.gatewayUrl).head("/openapi.json")).status).toBe(200);
    expect((await request(mesh.gatewayUrl).head("/health")).status).toBe(200);
  });

  it("another method on a known path is 405 with Allow; OPTIONS advertises that method (and POST for a payment's own action on a paid GET)", async () => {
    enveloped(await post("/api/pricing", {}), 405, "method_not_allowed", "/api/pricing");
    const put = await request(mesh.gatewayUrl).put("/api/chain/chain-id").set(bearer());
    enveloped(put, 405, "method_not_allowed", "/api/chain/chain-id");
    expect(put.headers.allow).toBe("GET");
    const get405 = await request(mesh.gatewayUrl).get("/api/chain/call").set(bearer());
    enveloped(get405, 405, "method_not_allowed", "/api/chain/call");
    expect(get405.headers.allow).toBe("POST");

    for (const [path, method, allowed] of [
      ["/api/chain/chain-id", "GET", "GET,POST"],
      // The bodiless POST an MPP session client sends to close or top up (browser callers too).
      ["/api/chain/chain-id", "POST", "GET,POST"],
      ["/api/chain/estimate-gas", "POST", "POST"],
      ["/api/chain/code/0x0000000000000000000000000000000000000001", "GET", "GET,POST"],
      ["/api/pricing", "GET", "GET"],
    ] as const) {
      const preflight = await request(mesh.gatewayUrl)
        .options(path)
        .set({ Origin: "https://app.example", "Access-Control-Request-Method": method });
      expect(preflight.status, path).toBe(204);
      expect(preflight.headers["access-control-allow-methods"]).toBe(allowed);
      expect(preflight.headers["access-control-allow-origin"]).toBe("*");
      expect(preflight.headers["access-control-allow-headers"]).toMatch(/Authorization/);
      expect(preflight.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    }
    const unknown = await request(mesh.gatewayUrl)
      .options("/api/chain/nope")
      .set({ Origin: "https://app.example", "Access-Control-Request-Method": "GET" });
    enveloped(unknown, 404, "not_found", "/api/chain/nope");
  });

  it("a preflight allows every header the official x402 fetch client sends from a browser, Access-Control-Expose-Headers included", async () => {
    const preflight = await request(mesh.gatewayUrl).options("/api/chain/chain-id").set({
      Origin: "https://app.example",
      "Access-Control-Request-Method": "GET",
      // @x402/fetch sets Access-Control-Expose-Headers on its paid retry.
      "Access-Control-Request-Headers": "payment-signature,access-control-expose-headers",
    });
    expect(preflight.status).toBe(204);
    const allowed = String(preflight.headers["access-control-allow-headers"]).toLowerCase().split(",");
    expect(allowed).toEqual(expect.arrayContaining(["payment-signature", "access-control-expose-headers"]));
  });

  it("case variants and trailing slashes are 404 with a hint, never served or counted", async () => {
    const before = await dayUsed(apiKey);
    const calls = await executes();
    for (const [path, meant] of [
      ["/api/Chain/CHAIN-ID", "/api/chain/chain-id"],
      ["/api/chain/chain-id/", "/api/chain/chain-id"],
      ["/API/PRICING", "/api/pricing"],
      [
        "/api/chain/code/0x0000000000000000000000000000000000000001/",
        "/api/chain/code/0x0000000000000000000000000000000000000001",
      ],
      ["/api/chain/Block/Latest", "/api/chain/block/Latest"],
    ]) {
      const res = await get(path!, bearer());
      enveloped(res, 404, "not_found", path!);
      expect(res.body.error.message).toContain(`did you mean ${meant}?`);
      expect(res.headers["x-quota-day-used"]).toBeUndefined();
    }
    const postVariant = await post("/api/chain/Call", { to: `0x${"1".repeat(40)}`, data: "0x" }, bearer());
    enveloped(postVariant, 404, "not_found", "/api/chain/Call");
    expect(await executes()).toBe(calls);
    expect(await dayUsed(apiKey)).toBe(before + 1);
  });

  it("an error before routing names the path template in meta.endpoint, never the raw path", async () => {
    const address = `0x${"1".repeat(40)}`;
    const malformed = await post(`/api/chain/call`, "{not json", bearer());
    enveloped(malformed, 400, "invalid_body", "/api/chain/call");
    // A GET endpoint with a JSON body the parser cannot read: refused before routing.
    const body = await request(mesh.gatewayUrl)
      .get(`/api/chain/code/${address}`)
      .set({ ...bearer(), "Content-Type": "application/json" })
      .send("{not json");
    enveloped(body, 400, "invalid_body", "/api/chain/code/{address}");
    const huge = await request(mesh.gatewayUrl)
      .get(`/api/chain/contract/${address}`)
      .set({ ...bearer(), "Content-Type": "application/json" })
      .send(JSON.stringify({ pad: "x".repeat(200_000) }));
    enveloped(huge, 413, "payload_too_large", "/api/chain/contract/{address}");
  });
});

describe("requests Node's HTTP parser refuses are still enveloped", () => {
  it("a header with a control character: 400 malformed_request with X-Request-Id and the template", async () => {
    const answer = parseRaw(
      await raw("GET /api/chain/block/latest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Trace: a\u0001b\r\n\r\n"),
    );
    expect(answer.status).toBe(400);
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
    expect(answer.body).toEqual({
      data: null,
      error: { code: "malformed_request", message: expect.any(String) },
      meta: { endpoint: "/api/chain/block/{number}", request_id: answer.headers["x-request-id"] },
    });
    expect(answer.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("headers over the size limit: 431 headers_too_large, enveloped", async () => {
    const answer = parseRaw(
      await raw(`GET /api/pricing HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`),
    );
    expect(answer.status).toBe(431);
    expect(answer.body).toMatchObject({ data: null, error: { code: "headers_too_large" } });
    expect(answer.body.meta.request_id).toBe(answer.headers["x-request-id"]);
  });
});

describe("block tags in log ranges are read against the head", () => {
  it("from_block after to_block is 400 naming from_block when a bound is a tag, and costs nothing", async () => {
    const { apiKey: key, accountId } = await createAccountWithKey({ burst: SUITE_BURST });
    const auth = { Authorization: `Bearer ${key}` };
    const head = BigInt((await get("/api/chain/block-number", auth)).body.data.block_number);
    const past = `0x${(head + 10n).toString(16)}`;
    for (const path of ["/api/chain/events", "/api/chain/erc20-transfers"]) {
      for (const range of [
        "from_block=latest&to_block=5",
        "from_block=latest&to_block=earliest",
        "from_block=pending&to_block=0x1",
        `from_block=${past}`,
        `from_block=${past}&to_block=latest`,
        `from_block=${past}&to_block=${head + 20n}`,
      ]) {
        const res = await get(`${path}?${range}`, auth);
        enveloped(res, 400, "invalid_parameter", path);
        expect(res.body.error.parameter, range).toBe("from_block");
        expect(res.body.error.message).toMatch(
          /^from_block: (must not be after to_block|is after the chain head)/,
        );
      }
    }
    // One block-number call before: the twelve 400s cost nothing (their units went back to the
    // key's lease or its windows, which countedToday waits for).
    expect(await countedToday(accountId, 1)).toBe(1);
  });

  it("a range partly past the head answers the logs up to the head", async () => {
    const head = BigInt((await get("/api/chain/block-number", bearer())).body.data.block_number);
    const contract = devnet.demo.ethereum.erc20.address;
    const upToHead = await get(
      `/api/chain/erc20-transfers?contract=${contract}&from_block=0&to_block=${head}`,
      bearer(),
    );
    const beyond = await get(
      `/api/chain/erc20-transfers?contract=${contract}&from_block=0&to_block=${head + 500n}`,
      bearer(),
    );
    expect(beyond.status).toBe(200);
    expect(beyond.body.data).toEqual(upToHead.body.data);
    expect(beyond.body.data.count).toBeGreaterThan(0);
  });
});

describe("GET /api/account/usage", () => {
  it("sits behind the burst guard chain calls share: 429 rate_limited with Retry-After: 1", async () => {
    const { apiKey: key } = await createAccountWithKey({ burst: 3 });
    const auth = { Authorization: `Bearer ${key}` };
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => get("/api/account/usage?days=366", auth)),
    );
    const limited = answers.filter((r) => r.status === 429);
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    expect(limited.length).toBeGreaterThan(0);
    for (const r of limited) {
      expect(r.body).toEqual({
        error: "rate_limited",
        message: expect.any(String),
        request_id: r.headers["x-request-id"],
      });
      expect(r.headers["retry-after"]).toBe("1");
    }
  });

  it("refuses keys of inactive accounts with 403 subscription_inactive, as the chain endpoints do", async () => {
    const { accountId, apiKey: key } = await createAccountWithKey({ burst: SUITE_BURST });
    const auth = { Authorization: `Bearer ${key}` };
    expect((await get("/api/account/usage", auth)).status).toBe(200);
    await updateAccount(accountId, { status: "canceled" });
    enveloped(
      await get("/api/account/usage?days=7", auth),
      403,
      "subscription_inactive",
      "/api/account/usage",
    );
    enveloped(await get("/api/chain/chain-id", auth), 403, "subscription_inactive", "/api/chain/chain-id");
  });

  it("documents its refusals in /openapi.json (every answer above was checked against it)", async () => {
    const res = await get("/api/account/usage?days=0", bearer());
    enveloped(res, 400, "invalid_parameter", "/api/account/usage");
    expect(res.body.error.parameter).toBe("days");
  });
});

describe("the published documents are built once, never from the Host header (issue 18, finding 3)", () => {
  it("serves the same bytes for every Host, none of which appears in them", async () => {
    // The discovery list is rebuilt once a minute (this loop may straddle a rebuild): its build
    // time aside, the bytes are the same.
    const built = (text: string) => text.replace(/"lastUpdated":"[^"]*"/g, '"lastUpdated":""');
    for (const path of ["/openapi.json", "/.well-known/openapi.json", "/llms.txt", "/.well-known/x402"]) {
      const reference = await request(mesh.gatewayUrl).get(path);
      expect(reference.status).toBe(200);
      const bytes = built(reference.text);
      expect(bytes).toContain(mesh.gatewayUrl); // the configured PUBLIC_BASE_URL
      for (let i = 0; i < 150; i++) {
        const host = `tenant-${i}-${Math.random().toString(36).slice(2)}.attacker.example`;
        const res = await request(mesh.gatewayUrl).get(path).set("Host", host);
        expect(res.status).toBe(200);
        expect(built(res.text) === bytes, `${path} for Host ${host}`).toBe(true);
        expect(res.text.includes(host)).toBe(false);
      }
    }
    const doc = (await get("/openapi.json")).body;
    expect(doc.servers).toEqual([{ url: mesh.gatewayUrl }]);
  });
});
