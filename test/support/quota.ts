import { get } from "./gateway.ts";

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
export async function dayUsed(apiKey: string): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const res = await get("/api/chain/chain-id", { Authorization: `Bearer ${apiKey}` });
    if (res.status !== 200) throw new Error(`chain-id answered ${res.status}: ${JSON.stringify(res.body)}`);
    const used = res.headers["x-quota-day-used"];
    if (used !== undefined) return Number(used);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("no metered answer in 20 calls: is quota-meter failing open?");
}
