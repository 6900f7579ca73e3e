import request from "supertest";
import { mesh } from "./gateway.ts";
import { assertConforms } from "./openapi.ts";

/**
 * Burst allowance for suite accounts: the default guard (50 calls at once, 50/s) would
 * turn a fast sequential suite into 429s.
 */
export const SUITE_BURST = 100_000;

/**
 * Day usage of the key's account, read from a metered call (chain-id). A call served while
 * the metering store is briefly out of reach carries no X-Quota headers and is not
 * counted (spec 8.3), so such answers are skipped.
 */
export async function dayUsed(apiKey: string, gatewayUrl = mesh.gatewayUrl): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const res = await request(gatewayUrl)
      .get("/api/chain/chain-id")
      .set({ Authorization: `Bearer ${apiKey}` });
    await assertConforms("get", "/api/chain/chain-id", res);
    if (res.status !== 200) throw new Error(`chain-id answered ${res.status}: ${JSON.stringify(res.body)}`);
    const used = res.headers["x-quota-day-used"];
    if (used !== undefined) return Number(used);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("no metered answer in 20 calls: is quota-meter failing open?");
}

/** Reads settledDayUsed makes; each is a metered call and counted. */
export const SETTLED_READS = 3;

/**
 * Day usage once every lease of the key has ended and its unused units are back in the window:
 * a lease lives 1 s (LEASE_TTL_MS), and the units of one that ended are given back with the
 * gateway's next usage batch, so a read that asks for a new lease right then is numbered above
 * them. Three reads SETTLE_SPACING_MS apart: the first ends the caller's lease, the second ends the first's
 * (its lease of one unit, used up), and the third is numbered after every return has landed. The
 * answer counts the three reads. `gatewayUrl`: a suite's own mesh (the shared one's by default).
 */
/**
 * 1 s of lease life, up to 250 ms to the sweep that ends it, 100 ms to the usage batch, and room for
 * a loaded machine's report round trip (a full suite on 2 cores took more than 1.2 s in all).
 */
const SETTLE_SPACING_MS = 1_600;

export async function settledDayUsed(apiKey: string, gatewayUrl = mesh.gatewayUrl): Promise<number> {
  let used = 0;
  for (let i = 0; i < SETTLED_READS; i++) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_SPACING_MS));
    used = await dayUsed(apiKey, gatewayUrl);
  }
  return used;
}
