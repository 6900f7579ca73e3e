// GET /.well-known/x402 while payment-verifier (where the offers come from) is away, on a mesh of its
// own: before any list could be built it is a 503 to retry, never an empty or partial list; once
// payment-verifier is back the next read has it; and a list built once keeps being served through
// an outage (it is rebuilt from payment-verifier at most once a minute, not per read).

import { PAID_RESOURCES } from "@tollgate/catalog";
import { freePort, type Mesh } from "@tollgate/local";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { devnet, sharedSettlementEnv } from "../support/devnet.ts";
import { eventually } from "../support/eventually.ts";
import { assertConforms } from "../support/openapi.ts";
import { startOwnMesh } from "../support/own-mesh.ts";

let mesh: Mesh;

beforeAll(async () => {
  const ethereum = devnet.chains.ethereum?.rpcUrl;
  if (!ethereum) throw new Error("the shared devnet has no ethereum chain");
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `discovery${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      UPSTREAMS_ETHEREUM: ethereum,
      UPSTREAMS_SEPOLIA: `http://127.0.0.1:${await freePort()}`,
    },
    serviceEnv: { "payment-verifier": sharedSettlementEnv("spare4") },
  });
});

afterAll(async () => {
  await mesh?.stop();
});

const list = async () => {
  const res = await request(mesh.gatewayUrl).get("/.well-known/x402");
  await assertConforms("get", "/.well-known/x402", res);
  return res;
};

describe("the x402 discovery list through a payment-verifier outage", () => {
  it("is 503 until a first list can be built, then served, and kept through a later outage", async () => {
    await mesh.services["payment-verifier"].stop();
    const started = Date.now();
    const away = await list();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(away.status).toBe(503);
    expect(away.body).toMatchObject({ data: null, error: { code: "service_unavailable" } });

    await mesh.restart("payment-verifier");
    const back = await eventually(list, (res) => res.status === 200, 30_000, 200);
    expect(back.status).toBe(200);
    expect(back.body.items).toHaveLength(PAID_RESOURCES.length);
    for (const item of back.body.items) expect(item.accepts.length).toBeGreaterThan(0);

    await mesh.services["payment-verifier"].stop();
    const during = await list();
    expect(during.status).toBe(200);
    expect(during.text).toBe(back.text);
    // A paid call's offers, by contrast, need payment-verifier: 503 to retry.
    const call = await request(mesh.gatewayUrl).get("/api/chain/block-number");
    expect(call.status).toBe(503);
  });
});
