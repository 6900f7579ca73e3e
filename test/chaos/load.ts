// The chaos run's steady mixed load: one loop per API-key account and per payer (x402 exact,
// x402-batch, MPP charge and session), each one call at a time, and the tally of what they saw —
// per phase, and the running totals the system of record is reconciled against.
import { priceAtomic } from "@tollgate/catalog";
import type { Mesh } from "@tollgate/local";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { Receipt } from "mppx";
import { sleep, until } from "../support/eventually.ts";
import type { mppChargePayer, mppSessionPayer } from "../support/mppx.ts";
import type { x402Payer } from "../support/x402.ts";
import type { batchPayer } from "../support/x402-batch.ts";
import { CLASSES, type Class } from "./report.ts";

interface ClassStats {
  statuses: Record<string, number>;
  /** Answers that were 200. */
  served: number;
  /** API-key 200s without X-Quota headers: served while metering was out of reach (spec 8.3). */
  failOpen: number;
  /** Answers with a status of 500 or one not in the error table's 5xx (502/503/504). */
  bad5xx: number;
  lastFailureAt: number;
  firstFailureAt: number;
  /** The refusals seen, by status and code, with one message each (diagnosis). */
  reasons: Record<string, string>;
}

export const PRICE = priceAtomic("0.001"); // chain-id and block-number

/** USDC for the MPP session's channel: ten minutes of calls at 5 a second beyond the soak, if any. */
export function sessionDeposit(soakMs = 0): string {
  return String(Math.ceil(((soakMs / 1000 + 600) * 5 * Number(PRICE)) / 1e6));
}

export const now = () => performance.now();

function emptyStats(): ClassStats {
  return {
    statuses: {},
    served: 0,
    failOpen: 0,
    bad5xx: 0,
    lastFailureAt: 0,
    firstFailureAt: 0,
    reasons: {},
  };
}

/** What the load generator saw: per phase, and the tallies the system of record is checked against. */
const perClass = <T>(make: () => T) =>
  Object.fromEntries(CLASSES.map((c) => [c, make()])) as Record<Class, T>;

export class Tally {
  phase: Record<Class, ClassStats> = perClass(emptyStats);
  /** Per account id: API-key 200s that carried X-Quota headers (counted in the windows). */
  readonly counted = new Map<string, number>();
  /** Per account id: API-key answers the gateway reports as usage (every answer past auth). */
  readonly reported = new Map<string, number>();
  readonly lastWindow = new Map<string, number>();
  /** Per exact payer: paid calls served. */
  readonly x402Served = new Map<string, number>();
  batchServed = 0;
  /** API-key calls answered 503 because Authorize did not answer in time (its unit may be counted). */
  authGaveUp = 0;
  batchCumulative = 0n;
  mppServed = 0;
  sessionServed = 0;
  /** The session channel's accepted amount, as the last served call's receipt gave it. */
  sessionSpent = 0n;
  readonly transactions = new Set<string>();
  servedTwice = 0;
  /** The credits-only account (cluster run): calls served with a draw (X-Credits-Remaining), and without one. */
  creditsDrawn = 0;
  creditsFailOpen = 0;
  readonly total = { answered: perClass(() => 0), served: perClass(() => 0) };

  record(cls: Class, status: number, reason = "", t = now()): void {
    const s = this.phase[cls];
    // No answer at all: the connection was refused (the gateway was down, nothing was sent) or cut
    // with the request on it.
    const label = status === 0 ? (reason.includes("ECONNREFUSED") ? "refused" : "cut") : String(status);
    if (status !== 200) {
      const key = `${label} ${/"code":"([a-z_]+)"/.exec(reason)?.[1] ?? ""}`.trim();
      if (!(key in s.reasons)) s.reasons[key] = reason.slice(0, 300);
    }
    s.statuses[label] = (s.statuses[label] ?? 0) + 1;
    this.total.answered[cls]++;
    if (status === 200) {
      s.served++;
      this.total.served[cls]++;
      return;
    }
    // A 402 on a paid class mid-fault is the payment being refused or re-synchronised; still a failure.
    if (!s.firstFailureAt) s.firstFailureAt = t;
    s.lastFailureAt = t;
    if (status === 500 || (status > 500 && ![502, 503, 504].includes(status))) s.bad5xx++;
  }

  newPhase(): Record<Class, ClassStats> {
    const done = this.phase;
    this.phase = perClass(emptyStats);
    return done;
  }
}

export interface Account {
  id: string;
  key: string;
}

/** The steady mixed load: loops per account and per payer, each one call at a time. */
export function startLoad(
  mesh: Mesh,
  accounts: Account[],
  payers: ReturnType<typeof x402Payer>[],
  batch: ReturnType<typeof batchPayer>,
  mpp: { charge: ReturnType<typeof mppChargePayer>; session: ReturnType<typeof mppSessionPayer> },
  tally: Tally,
  /** A credits-only account whose every call draws its price from credits (the cluster run's). */
  credits?: Account,
) {
  let running = true;
  // Paused, each loop waits before its next call: the reconciliation reads a quiet mesh.
  let paused: Promise<void> | undefined;
  let resume = () => {};
  let inFlight = 0;
  const gate = async () => {
    inFlight--;
    while (paused) await paused;
    inFlight++;
  };
  const loops: Promise<void>[] = [];
  const url = (path: string) => `${mesh.gatewayUrl}${path}`;
  const keyLoop = async (account: Account, path: string) => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await fetch(url(path), {
          headers: { authorization: `Bearer ${account.key}` },
          signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        const used = res.headers.get("x-quota-day-used");
        const text = await res.text();
        if (status !== 200) reason = text;
        // Usage is reported for every call past authorization (not when quota-meter could not say).
        if (text.includes("API-key service is unavailable")) tally.authGaveUp++;
        const authorized =
          status !== 429 && status !== 401 && !text.includes("API-key service is unavailable");
        if (authorized) tally.reported.set(account.id, (tally.reported.get(account.id) ?? 0) + 1);
        if (status === 200 && used !== null) {
          tally.counted.set(account.id, (tally.counted.get(account.id) ?? 0) + 1);
          tally.lastWindow.set(account.id, Number(used));
        }
        if (status === 200 && used === null) tally.phase.key.failOpen++;
      } catch (err) {
        status = 0; // no answer at all (the gateway was down): not a 5xx, but a failure
        reason = errorText(err);
      }
      tally.record("key", status, reason);
      // time-based: paces the client: it backs off after a failed call.
      if (status === 0) await sleep(100);
      // time-based: paces the client: one call every 60 ms.
      await sleep(60);
    }
  };
  const creditsLoop = async (account: Account) => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await fetch(url("/api/chain/block-number"), {
          headers: { authorization: `Bearer ${account.key}` },
          signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 200 && res.headers.get("x-credits-remaining") !== null) tally.creditsDrawn++;
        else if (status === 200) tally.creditsFailOpen++;
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("key", status, reason);
      // time-based: paces this client's calls (a steady load, not a flood).
      await sleep(status === 0 ? 160 : 60);
    }
  };
  const x402Loop = async (payer: ReturnType<typeof x402Payer>) => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const pending = payer.fetch(url("/api/chain/chain-id"), { signal: AbortSignal.timeout(30_000) });
        const res = await pending;
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 200) {
          const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
          if (receipt.transaction && tally.transactions.has(receipt.transaction)) tally.servedTwice++;
          if (receipt.transaction) tally.transactions.add(receipt.transaction);
          tally.x402Served.set(payer.address, (tally.x402Served.get(payer.address) ?? 0) + 1);
        }
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("x402", status, reason);
      // time-based: paces the client between calls.
      await sleep(status === 0 ? 300 : 150);
    }
  };
  const batchLoop = async () => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await batch.fetch(url("/api/chain/block-number"), {
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 402 && text.includes("mismatch") && process.env.CHAOS_DEBUG) {
          const offer = res.headers.get("payment-required") ?? "";
          const decoded = JSON.parse(Buffer.from(offer, "base64").toString("utf8")) as {
            accepts: { extra: unknown }[];
          };
          process.stderr.write(`batch mismatch: ${JSON.stringify(decoded.accepts.map((a) => a.extra))}\n`);
        }
        if (status === 200) {
          tally.batchServed++;
          const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
          const state = (receipt.extra as { channelState?: { chargedCumulativeAmount?: string } } | undefined)
            ?.channelState;
          if (state?.chargedCumulativeAmount) tally.batchCumulative = BigInt(state.chargedCumulativeAmount);
        }
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("batch", status, reason);
      // time-based: paces the client between calls.
      await sleep(status === 0 ? 300 : 200);
    }
  };
  const mppChargeLoop = async () => {
    const references = new Set<string>();
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await mpp.charge.fetch(url("/api/chain/chain-id"), {
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 200) {
          tally.mppServed++;
          // Each charge is its own transfer: one named twice was served twice.
          const reference = Receipt.fromResponse(res).reference;
          if (references.has(reference)) tally.servedTwice++;
          references.add(reference);
        }
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("mpp", status, reason);
      // time-based: paces the client between calls.
      await sleep(status === 0 ? 300 : 200);
    }
  };
  const sessionLoop = async () => {
    while (running) {
      await gate();
      let status = 0;
      let reason = "";
      try {
        const res = await mpp.session.manager.fetch(url("/api/chain/block-number"), {
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        const text = await res.text();
        if (status !== 200) reason = text;
        if (status === 200) {
          tally.sessionServed++;
          if (res.receipt?.spent) tally.sessionSpent = BigInt(res.receipt.spent);
        }
      } catch (err) {
        status = 0;
        reason = errorText(err);
      }
      tally.record("session", status, reason);
      // time-based: paces the client between calls.
      await sleep(status === 0 ? 300 : 200);
    }
  };
  for (const a of accounts) {
    loops.push(keyLoop(a, "/api/chain/block-number"), keyLoop(a, "/api/chain/chain-id"));
  }
  if (credits) loops.push(creditsLoop(credits));
  loops.push(mppChargeLoop(), sessionLoop());
  for (const p of payers) loops.push(x402Loop(p));
  loops.push(batchLoop());
  inFlight = loops.length;
  return {
    /** Stops new calls and resolves once every loop is between calls. */
    async pause() {
      paused = new Promise<void>((r) => {
        resume = r;
      });
      await until("every loop is between calls", () => inFlight === 0, 60_000, 20);
    },
    resume() {
      paused = undefined;
      resume();
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

function errorText(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return `${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? ""} ${e.cause.message ?? ""})` : ""}`;
}
