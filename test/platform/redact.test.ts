// The one redaction of the mesh (libs/platform/src/redact.ts), on the shapes credentials take in
// the URLs operators configure. The process-level proof is test/security/secrets-in-logs.test.ts.
import { readSecret, redactForClient, redactUrl, scrubSecrets } from "@tollgate/platform";
import { describe, expect, it } from "vitest";
import { withEnv } from "../support/mesh.ts";

describe("redactUrl", () => {
  it("keeps scheme, host and port; cuts user, password, path and query", () => {
    expect(redactUrl("redis://default:s3cr%40t@redis-master.data.svc:6379/0")).toBe(
      "redis://***@redis-master.data.svc:6379/…",
    );
    expect(redactUrl("nats://tokenonly@127.0.0.1:4222")).toBe("nats://***@127.0.0.1:4222");
    expect(redactUrl("https://eth.node.example/v3/0123456789abcdef?apikey=zz")).toBe(
      "https://eth.node.example/…",
    );
    expect(redactUrl("http://127.0.0.1:8545")).toBe("http://127.0.0.1:8545");
    expect(redactUrl("not a url with pw")).toBe("[unparsable URL]");
  });
});

describe("scrubSecrets", () => {
  it("removes every secret read through readSecret, whole or by its credential parts, wherever it appears", () => {
    const env = {
      TEST_REDACT_TOKEN: "tok-9f8e7d6c5b4a39281706",
      TEST_REDACT_URLS:
        "https://node-a.example/v2/alchemyKey0123456789,http://user:p%40ss-word-1@node-b.example/rpc?key=queryKey987654321",
    };
    withEnv(env, () => {
      readSecret("TEST_REDACT_TOKEN");
      readSecret("TEST_REDACT_URLS");
    });
    const line = [
      `token=${env.TEST_REDACT_TOKEN}`,
      "HTTP request failed. URL: https://node-a.example/v2/alchemyKey0123456789",
      "path /v2/alchemyKey0123456789 and key queryKey987654321",
      "password p@ss-word-1 (decoded) and p%40ss-word-1 (encoded)",
      "a library quoting nats://someone:unknown-pw@10.0.0.1:4222",
    ].join("\n");
    const scrubbed = scrubSecrets(line);
    for (const leaked of [
      env.TEST_REDACT_TOKEN,
      "alchemyKey0123456789",
      "queryKey987654321",
      "p@ss-word-1",
      "p%40ss-word-1",
      "unknown-pw",
    ]) {
      expect(scrubbed).not.toContain(leaked);
    }
    // What is not secret stays readable.
    expect(scrubbed).toContain("HTTP request failed. URL:");
    expect(scrubbed).toContain("nats://***@10.0.0.1:4222");
  });
});

describe("redactForClient", () => {
  it("redacts as logs are, also inside base64 and base64url runs, and leaves runs without a secret byte for byte", () => {
    const url = "https://node-c.example/v3/clientFacingKey0123456789";
    withEnv({ TEST_REDACT_CLIENT_URL: url }, () => readSecret("TEST_REDACT_CLIENT_URL"));
    const reason = `deposit_simulation_failed: RPC Request failed. URL: ${url}`;
    expect(redactForClient(reason)).not.toContain("clientFacingKey0123456789");

    // x402's PAYMENT-REQUIRED: base64 JSON whose `error` quotes the message.
    const offer = { x402Version: 2, error: reason, accepts: [{ scheme: "exact", payTo: "0xabc" }] };
    const header = Buffer.from(JSON.stringify(offer)).toString("base64");
    const redacted = redactForClient(header);
    const decoded = JSON.parse(Buffer.from(redacted, "base64").toString("utf8"));
    expect(JSON.stringify(decoded)).not.toContain("clientFacingKey0123456789");
    expect(decoded).toMatchObject({
      x402Version: 2,
      accepts: offer.accepts,
      error: expect.stringContaining("[redacted]"),
    });
    // base64url inside a quoted parameter (an MPP challenge's request), kept unpadded.
    const param = `Payment request="${Buffer.from(JSON.stringify(offer)).toString("base64url")}"`;
    expect(
      Buffer.from(/request="([^"]+)"/.exec(redactForClient(param))![1]!, "base64url").toString(),
    ).not.toContain("clientFacingKey0123456789");

    // Nothing secret: the very same text, so a signed or hashed value is never altered.
    const clean = Buffer.from(JSON.stringify({ ...offer, error: "payment required" })).toString("base64");
    expect(redactForClient(clean)).toBe(clean);
    expect(redactForClient(`Payment id="abc", request="${clean}"`)).toBe(
      `Payment id="abc", request="${clean}"`,
    );
  });
});
