import { readFileSync } from "node:fs";
import { freePort, type Mesh, meshAdmin } from "@tollgate/local";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually } from "../support/eventually.ts";
import { assertConforms } from "../support/openapi.ts";
import { startOwnMesh } from "../support/own-mesh.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8"));
let mesh: Mesh;
let apiKey: string;

// Its own mesh: ethereum has one dead and one live upstream; sepolia has only dead ones.
beforeAll(async () => {
  const dead = [await freePort(), await freePort(), await freePort()].map((p) => `http://127.0.0.1:${p}`);
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `failover${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: `${dead[0]},${devnet.chains.ethereum.rpcUrl}`,
      UPSTREAMS_SEPOLIA: `${dead[1]},${dead[2]}`,
    },
    serviceEnv: {
      gateway: { EXECUTE_DEADLINE_MS: "4000" },
      // No devnet in this mesh, so payments settle on the shared devnet's chain.
      "payment-verifier": {
        ...sharedSettlementEnv("spare4"),
      },
    },
  });
  const admin = meshAdmin(mesh);
  apiKey = (await admin.quickstart("failover")).secret;
  admin.close();
});

afterAll(async () => {
  await mesh?.stop();
});

describe("rpc-proxy failover through the whole mesh", () => {
  it("serves every request when one of two upstreams is dead", async () => {
    for (let i = 0; i < 20; i++) {
      const res = await request(mesh.gatewayUrl)
        .get("/api/chain/block-number")
        .set("Authorization", `Bearer ${apiKey}`);
      expect(res.status).toBe(200);
      expect(res.body.data.block_number).toMatch(/^0x/);
      await assertConforms("get", "/api/chain/block-number", res);
    }
  });

  it("answers an enveloped 502/503/504 within the deadline when every upstream is dead, never a hang", async () => {
    const started = Date.now();
    const res = await request(mesh.gatewayUrl)
      .get("/api/chain/block-number?network=sepolia")
      .set("Authorization", `Bearer ${apiKey}`);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect([502, 503, 504]).toContain(res.status);
    expect(res.body).toMatchObject({ data: null, error: { code: expect.stringMatching(/^upstream_/) } });
    expect(res.body.meta.endpoint).toBe("/api/chain/block-number");
    await assertConforms("get", "/api/chain/block-number", res);
  });

  it("answers 503 (not a 402 without offers) while payment-verifier is down, and keys still work", async () => {
    await mesh.services["payment-verifier"].stop();
    try {
      const unpaid = await request(mesh.gatewayUrl).get("/api/chain/block-number");
      expect(unpaid.status).toBe(503);
      expect(unpaid.headers["payment-required"]).toBeUndefined();
      expect(unpaid.body).toMatchObject({ data: null, error: { code: "service_unavailable" } });
      expect(unpaid.body.error.message).toContain("Authorization: Bearer");
      await assertConforms("get", "/api/chain/block-number", unpaid);
      const keyed = await request(mesh.gatewayUrl)
        .get("/api/chain/block-number")
        .set("Authorization", `Bearer ${apiKey}`);
      expect(keyed.status).toBe(200);
    } finally {
      await mesh.restart("payment-verifier");
    }
    // The gateway reaches the restarted payment-verifier again within a few seconds.
    const offered = await eventually(
      () => request(mesh.gatewayUrl).get("/api/chain/block-number"),
      (res) => res.status !== 503,
      5_000,
      200,
    );
    expect(offered.status).toBe(402);
    expect(offered.headers["payment-required"]).toMatch(/^[A-Za-z0-9+/=]+$/);
  });
});
