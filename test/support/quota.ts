import request from "supertest";
import { ownDayUsed } from "./credits.ts";
import { eventually } from "./eventually.ts";
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
  const used = await eventually(
    async () => {
      const res = await request(gatewayUrl)
        .get("/api/chain/chain-id")
        .set({ Authorization: `Bearer ${apiKey}` });
      await assertConforms("get", "/api/chain/chain-id", res);
      if (res.status !== 200) throw new Error(`chain-id answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.headers["x-quota-day-used"] as string | undefined;
    },
    (got) => got !== undefined,
    10_000,
    100,
  );
  if (used === undefined) throw new Error("no metered answer in 10 s: is quota-meter failing open?");
  return Number(used);
}

/**
 * The account's calls counted today once they are `want`, read without counting (quota-meter's
 * window count, as the dashboard reads it): the units of leases that ended and of calls refused go
 * back with the gateway's usage batches, so the count only falls to its final value after the calls.
 * Its last read after 30 s otherwise (the caller's assertion says what it was). `at`: a suite's own
 * mesh (the shared one's by default).
 */
export const countedToday = (
  accountId: string,
  want: number,
  at: { stateDir: string; quotaMeterAddr: string } = mesh,
) => eventually(() => ownDayUsed(at, accountId), want);
