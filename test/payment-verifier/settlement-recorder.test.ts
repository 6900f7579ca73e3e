// The settlement recorder, driven with plain objects: every outcome becomes one event, except that
// `released` events (calls refused or unanswered after Verify, which cost the payer nothing) are
// bounded per payer per hour, so one authorization reused on a refused call cannot write an event
// a call for free.
import type { SettlementEventV2 } from "@tollgate/events";
import { createLogger } from "@tollgate/platform";
import { describe, expect, it } from "vitest";
import { createSettlementRecorder } from "../../services/payment-verifier/src/core/events.ts";
import type { Reservation } from "../../services/payment-verifier/src/stores/reservations.ts";

const reservation = (payer: string, token: string): Reservation => ({
  state: "reserved",
  token,
  scheme: "exact",
  requestId: `req-${token}`,
  endpoint: "/api/chain/events",
  network: "ethereum",
  payer,
  amount: "5000",
  asset: "0xusdc",
  paymentNetwork: "eip155:84532",
  credential: "",
  collected: "",
  hold: "",
  transaction: "",
  receipt: "",
  owner: "",
  attempt: "",
});

describe("settlement recorder", () => {
  it("publishes at most 20 released events per payer per hour, and every other outcome", () => {
    const published: SettlementEventV2[] = [];
    let clock = Date.parse("2026-11-28T10:00:00Z");
    const logger = createLogger("payment-verifier");
    logger.level = "silent";
    const recorder = createSettlementRecorder({ publish: (e) => published.push(e) }, logger, () => clock);
    const count = (payer: string, outcome: string) =>
      published.filter((e) => e.payer === payer && e.outcome === outcome).length;
    for (let i = 0; i < 50; i++) recorder.record(reservation("0xAbc", `r${i}`), "released", null, "refused");
    expect(count("0xAbc", "released")).toBe(20);
    // Any casing is the same payer; another payer has its own bound; settlements are never dropped.
    recorder.record(reservation("0xabc", "again"), "released", null, "refused");
    expect(count("0xabc", "released")).toBe(0);
    for (let i = 0; i < 3; i++) recorder.record(reservation("0xdef", `d${i}`), "released", null, "refused");
    expect(count("0xdef", "released")).toBe(3);
    for (let i = 0; i < 30; i++)
      recorder.record(
        reservation("0xAbc", `s${i}`),
        "settled",
        { kind: "transaction", transaction: `0x${i}` },
        null,
      );
    expect(count("0xAbc", "settled")).toBe(30);
    // The next hour, the payer's releases are sampled again.
    clock += 3_600_000;
    for (let i = 0; i < 5; i++) recorder.record(reservation("0xAbc", `n${i}`), "released", null, "refused");
    expect(count("0xAbc", "released")).toBe(25);
  });
});
