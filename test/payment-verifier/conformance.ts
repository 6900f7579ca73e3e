// The conformance suite every payment scheme must pass, run over payment-verifier's gRPC API with
// credentials made by the scheme's official client: its offer in the 402 carries the catalog price
// of every paid endpoint; a credential of another scheme of the same protocol is not its own; a
// payment is served once across two replicas; one call's Settle sent to both replicas at once is
// settled once (the same receipt for both, the money moved once); a call that got no answer moves
// no money and leaves the payment usable. A scheme joins by describing itself as a ConformanceTarget.
import { ENDPOINTS, priceAtomic } from "@tollgate/catalog";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Header, resource, uniqueId, type VerifierClient } from "./support.ts";

export interface ConformanceTarget {
  /** The scheme's name in metrics, events and Verify's answer. */
  scheme: string;
  /** Its name in DescribeMethods when the protocol names it otherwise (MPP lists its intents). */
  listedAs?: string;
  /** What stands in for a part that cannot run here, named in the suite's title. */
  standIns?: string;
  /** Two replicas sharing Redis, the scheme under test configured. */
  start(): Promise<{ a: VerifierClient; b: VerifierClient; stop(): Promise<void> }>;
  /** This scheme's offer for `endpoint` among the 402's headers: its price in atomic units. */
  offeredPrice(headers: Header[]): bigint | undefined;
  /** A credential for `endpoint`, made by the scheme's official client from the live 402. */
  pay(client: VerifierClient, endpoint: string): Promise<Header[]>;
  /**
   * The next payment of the payer of the last `pay`, when it takes another road (an x402-batch
   * voucher on the channel the last payment's deposit opened); `pay` otherwise.
   */
  payAgain?(client: VerifierClient, endpoint: string): Promise<Header[]>;
  /** The scheme's client reads the answer of its last payment's Settle (a channel client learns its charge). */
  settled?(answer: Header[]): Promise<void>;
  /** A well-formed credential of the same protocol for a scheme that is not this one. */
  foreign(client: VerifierClient, endpoint: string): Promise<Header[]>;
  /** What the receiver holds (atomic units), to see whether money moved. */
  received(): Promise<bigint>;
  /** What `received()` rises by when `credentials` are settled once: the price unless said (a deposit). */
  moves?(credentials: Header[], price: bigint): bigint;
}

const paid = "/api/chain/block-number";

export function schemeConformance(target: ConformanceTarget): void {
  describe(`scheme conformance: ${target.scheme}${target.standIns ? ` — stand-ins: ${target.standIns}` : ""}`, () => {
    let a: VerifierClient;
    let b: VerifierClient;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      ({ a, b, stop } = await target.start());
    });
    afterAll(async () => {
      await stop?.();
    });

    const call = (client: VerifierClient, method: "Verify", endpoint: string, credentials: Header[]) =>
      client.call(method, { requestId: uniqueId("req-"), resource: resource(endpoint), credentials });

    it("offers itself in every paid endpoint's 402 at the catalog price, and is listed in DescribeMethods", async () => {
      for (const endpoint of ENDPOINTS) {
        const { headers } = await a.call("Challenge", {
          requestId: uniqueId("req-"),
          resource: resource(endpoint.path),
        });
        expect(target.offeredPrice(headers ?? []), endpoint.path).toBe(priceAtomic(endpoint.price));
      }
      const { methods } = await a.call("DescribeMethods", {});
      expect(methods.map((m) => m.scheme)).toContain(target.listedAs ?? target.scheme);
    });

    it("does not take another scheme's credential of its protocol as its own", async () => {
      const v = await call(a, "Verify", paid, await target.foreign(a, paid));
      // Refused for what it is (or taken by the scheme it belongs to), never by this one.
      expect(v.scheme).not.toBe(target.scheme);
      expect(v.scheme).not.toBe("");
    });

    it("serves one payment once across two replicas", async () => {
      const credentials = await target.pay(a, paid);
      const results = await Promise.all([a, b, a, b].map((c) => call(c, "Verify", paid, credentials)));
      const won = results.filter((r) => r.valid);
      expect(won).toHaveLength(1);
      expect(won[0]?.scheme).toBe(target.scheme);
    });

    // The gateway sends a Settle that failed UNAVAILABLE once more, to the other replica, while the
    // first may still be running (its answer lost, not its work): one Settle of a call at a time.
    it("settles one call once when its Settle reaches both replicas at once: the same receipt, the money moved once", async () => {
      const price = priceAtomic(ENDPOINTS.find((e) => e.path === paid)?.price ?? "");
      for (const pay of [target.pay, target.payAgain ?? target.pay]) {
        const credentials = await pay.call(target, a, paid);
        const requestId = uniqueId("req-");
        const v = await a.call("Verify", { requestId, resource: resource(paid), credentials });
        expect(v.valid, v.reason).toBe(true);
        const before = await target.received();
        const settle = (c: VerifierClient) =>
          c.call("Settle", { requestId, paymentId: v.paymentId, resource: resource(paid), credentials });
        const [first, second] = await Promise.all([settle(a), settle(b)]);
        expect(first.settled, first.reason).toBe(true);
        expect(second.settled, second.reason).toBe(true);
        expect(second.headers).toEqual(first.headers);
        expect(second.transaction).toBe(first.transaction);
        expect((await target.received()) - before).toBe(target.moves?.(credentials, price) ?? price);
        await target.settled?.(first.headers ?? []);
      }
    });

    it("moves no money for a call that got no answer, and the payment then buys its call", async () => {
      const credentials = await target.pay(a, paid);
      const before = await target.received();
      const requestId = uniqueId("req-");
      const v = await a.call("Verify", { requestId, resource: resource(paid), credentials });
      expect(v.valid, v.reason).toBe(true);
      await b.call("Release", {
        requestId,
        paymentId: v.paymentId,
        reason: "upstream_timeout",
        resource: resource(paid),
        credentials,
      });
      expect(await target.received()).toBe(before);
      const again = uniqueId("req-");
      const retry = await b.call("Verify", { requestId: again, resource: resource(paid), credentials });
      expect(retry.valid, retry.reason).toBe(true);
      const s = await a.call("Settle", {
        requestId: again,
        paymentId: retry.paymentId,
        resource: resource(paid),
        credentials,
      });
      expect(s.settled, s.reason).toBe(true);
    });
  });
}
