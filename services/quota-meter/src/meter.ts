import { randomUUID } from "node:crypto";
import { grpc, type Logger, logSampler, ServiceError } from "@tollgate/platform";
import type { AuthorizeRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/AuthorizeRequest";
import type { AuthorizeResponse } from "@tollgate/platform/generated/tollgate/quota/v1/AuthorizeResponse";
import type { Decision as ProtoDecision } from "@tollgate/platform/generated/tollgate/quota/v1/Decision";
import type { Quota } from "@tollgate/platform/generated/tollgate/quota/v1/Quota";
import { mayHaveRun } from "@tollgate/platform/redis";
import { retryLater } from "@tollgate/platform/retry-later";
import { BudgetWatch, OVER_BUDGET } from "./budget.ts";
import type { KeySnapshot } from "./key-snapshot.ts";
import { isWellFormedKey, type KeyHasher, sameHash } from "./keys.ts";
import type { FailOpenReason, QuotaMetrics } from "./metrics.ts";
import {
  AUTHORIZATION_MEMORY_MS,
  type AuthorizeOutcome,
  type Decision,
  type QuotaStore,
} from "./store/types.ts";
import { WINDOW_GRACE_MS, type Windows, windowsAt } from "./windows.ts";

const PROTO_DECISION: Record<Decision, ProtoDecision> = {
  allow: "DECISION_ALLOW",
  invalid_key: "DECISION_INVALID_KEY",
  subscription_inactive: "DECISION_SUBSCRIPTION_INACTIVE",
  daily_limit_exceeded: "DECISION_DAILY_LIMIT_EXCEEDED",
  monthly_limit_exceeded: "DECISION_MONTHLY_LIMIT_EXCEEDED",
  rate_limited: "DECISION_RATE_LIMITED",
  no_account: "DECISION_NO_ACCOUNT",
  no_credits: "DECISION_NO_CREDITS",
};

/** A verified wallet as the gateway names it (lower case, as bound). */
const WALLET = /^0x[0-9a-f]{40}$/;
const NO_HASH = Buffer.alloc(0);

/** Sign-in-with-x has no fail-open snapshot (wallets are not keys): an unreachable store is a 503. */
const walletsUnavailable = () =>
  new ServiceError(
    grpc.status.UNAVAILABLE,
    "service_unavailable",
    "the account store is unavailable; retry with backoff",
  );

/** The X-Quota-* values: a window's pair only when that window is capped. */
export function quotaOf(o: {
  dayLimit: number;
  dayUsed: number;
  monthLimit: number;
  monthUsed: number;
}): Quota {
  return {
    ...(o.dayLimit > 0 ? { dayLimit: o.dayLimit, dayUsed: o.dayUsed } : {}),
    ...(o.monthLimit > 0 ? { monthLimit: o.monthLimit, monthUsed: o.monthUsed } : {}),
  };
}

/** The caller's deadline passed: it has answered without this Authorize. */
const tooLate = () =>
  new ServiceError(grpc.status.DEADLINE_EXCEEDED, "service_unavailable", "the caller's deadline passed");

/**
 * How long past its end a credit lease its gateway has not returned is settled from its reported
 * use: longer than a gateway takes to report its calls and the lease's end while quota-meter answers.
 */
const CREDIT_LEASE_GRACE_MS = 60_000;

/** Consecutive timeouts that open the breaker (skip Redis for the cooldown). */
const TIMEOUTS_TO_TRIP = 3;

export interface MeterDeps {
  store: QuotaStore;
  hasher: KeyHasher;
  snapshot: KeySnapshot;
  now: () => number;
  logger: Logger;
  metrics: QuotaMetrics;
  budgetMs: number;
  /** Longest wait while this process is busy (a burst queued on our side). */
  maxWaitMs: number;
  cooldownMs: number;
  defaultBurst: number;
  /** Leases: the most units one Authorize grants, and how long the gateway may serve from them. */
  lease: { maxUnits: number; ttlMs: number; dedupeTtlMs: number };
  /** The store's copy is gone (Redis restarted empty): the seeder looks now, not at its next check. */
  onCopyLost?: () => void;
}

/**
 * The Authorize hot path: format check, one HMAC, one Redis round trip. When Redis is
 * unreachable or over budget it fails open: keys in the snapshot are served unmetered
 * (no quota values), unknown keys are refused.
 */
export function createMeter(deps: MeterDeps) {
  const { store, snapshot, metrics, logger } = deps;
  // Wall-clock, not the injected clock: the breaker is about real elapsed time.
  let skipUntil = 0;
  // One timer for every Authorize in flight (not one per call): the Redis budget.
  const budget = new BudgetWatch(deps.budgetMs, deps.maxWaitMs);
  // Timeouts since Redis last answered in time: one slow answer (a scheduling hiccup on a
  // busy machine) must not turn the next second of traffic unmetered.
  let timeoutsInARow = 0;

  // One fail-open line per 10 s at most (an outage fails every call open), with the count skipped.
  const failOpenLine = logSampler(10_000);
  // Authorizes whose answer never came (the link dropped after Redis may have run the script):
  // the call was served unmetered, so what the script may have counted (the call's unit, or a
  // whole lease) goes back once Redis answers. A release names the id: it gives back only what
  // that Authorize counted, once, and makes it count nothing should it still run.
  const later = retryLater((id: string) => store.release(id, deps.lease.dedupeTtlMs));
  const releaseLater = (id: string) => later(id, id, Date.now() + AUTHORIZATION_MEMORY_MS);

  function answer(
    decision: Decision,
    metered: boolean,
    body: Omit<AuthorizeResponse, "decision" | "metered">,
  ) {
    metrics.decisions.inc({ decision, metered: String(metered) });
    return { decision: PROTO_DECISION[decision], metered, ...body } satisfies AuthorizeResponse;
  }

  function failOpen(hash: Buffer, reason: FailOpenReason, err?: unknown): AuthorizeResponse {
    metrics.failOpen.inc({ reason });
    const skipped = failOpenLine();
    if (skipped !== undefined) {
      logger.warn(
        { reason, err: err instanceof Error ? err.message : undefined, since_last_line: skipped },
        "Redis unavailable: Authorize fails open (known keys served unmetered, without quota values)",
      );
    }
    const known = snapshot.lookup(hash);
    if (!known) return answer("invalid_key", false, { quota: null });
    const ids = { accountId: known.accountId, keyId: known.keyId, quota: null };
    if (known.status !== "active") return answer("subscription_inactive", false, ids);
    return answer("allow", false, ids);
  }

  /** What the store granted after its caller stopped waiting goes straight back: nobody serves from it. */
  async function giveBack(late: AuthorizeOutcome, leaseId: string, windows: Windows): Promise<void> {
    if (late.decision !== "allow") return;
    // A credit draw is remembered under its id: released like the gateway's own release of it.
    if (late.credits) {
      await store.release(leaseId, deps.lease.dedupeTtlMs);
      return;
    }
    if (late.units < 1) return;
    const back = {
      leaseId,
      accountId: late.accountId,
      day: windows.day,
      month: windows.month,
      units: late.units,
    };
    await store.returnLease(back, deps.lease.dedupeTtlMs);
  }

  return {
    /**
     * `deadline` (ms since epoch, wall clock): when the caller stops waiting. Past it the caller
     * has answered its call without this grant, so nothing may be counted for it.
     */
    async authorize(req: AuthorizeRequest__Output, deadline = Infinity): Promise<AuthorizeResponse> {
      const wallet = req.wallet;
      // Never touch the store for what cannot be a key (or a wallet the gateway verified).
      if (wallet ? !WALLET.test(wallet) : !isWellFormedKey(req.apiKey))
        return answer(wallet ? "no_account" : "invalid_key", false, { quota: null });
      // Queued here past the gateway's deadline (a busy process): it answered 503 already.
      if (Date.now() >= deadline) throw tooLate();
      const hash = wallet ? NO_HASH : deps.hasher(req.apiKey);
      if (!store.isReady() || Date.now() < skipUntil) {
        if (wallet) throw walletsUnavailable();
        return failOpen(hash, store.isReady() ? "cooldown" : "unavailable");
      }

      const nowMs = deps.now();
      const windows = windowsAt(nowMs);
      // A batch's calls are counted whole (an older gateway sends 0: one call); its lease holds
      // at least them, whatever the cap on what is leased ahead.
      const calls = Math.max(1, req.calls);
      const units = Math.max(calls, Math.min(Math.max(1, req.leaseUnits), deps.lease.maxUnits));
      // The gateway's id, so it can release what this counted if it gives up waiting.
      const leaseId = req.authorizationId || randomUUID();
      const granting = store.authorize({
        keyHash: hash,
        wallet,
        priceAtomic: req.priceAtomic,
        nowMs,
        windows,
        defaultBurst: deps.defaultBurst,
        units,
        calls,
        authorizationId: leaseId,
        creditLeaseSettleAt: nowMs + deps.lease.ttlMs + CREDIT_LEASE_GRACE_MS,
        ...(req.closeCreditLeaseId
          ? { closeCreditLease: { leaseId: req.closeCreditLeaseId, creditsLeft: req.closeCreditsLeft } }
          : {}),
      });
      let o: AuthorizeOutcome;
      try {
        const reply = await budget.wait(granting);
        if (reply === OVER_BUDGET) {
          if (++timeoutsInARow >= TIMEOUTS_TO_TRIP) skipUntil = Date.now() + deps.cooldownMs;
          // Served unmetered: whatever the store still grants after we stopped waiting goes
          // straight back, so a late answer never leaves units counted that nobody used.
          granting.then(
            (late) => giveBack(late, leaseId, windows).catch(() => releaseLater(leaseId)),
            (err: unknown) => mayHaveRun(err) && releaseLater(leaseId),
          );
          if (wallet) throw walletsUnavailable();
          return failOpen(hash, "timeout");
        }
        o = reply;
      } catch (err) {
        if (mayHaveRun(err)) releaseLater(leaseId);
        if (wallet) throw walletsUnavailable();
        return failOpen(hash, "error", err);
      }

      timeoutsInARow = 0;
      if (o.decision === "released") throw tooLate();
      if (o.decision === "unseeded") {
        // Redis lost the copy since the seeder last looked: served as while it is seeded (spec 8.3).
        deps.onCopyLost?.();
        if (wallet) throw walletsUnavailable();
        return failOpen(hash, "unavailable");
      }
      if (Date.now() >= deadline) {
        // Answered after the caller gave up: it will release this id too (once for both).
        giveBack(o, leaseId, windows).catch(() => undefined);
        throw tooLate();
      }
      if (wallet) {
        if (o.decision === "no_account" || o.decision === "invalid_key")
          return answer("no_account", false, { quota: null });
      } else if (o.decision === "invalid_key" || !o.storedHash || !sameHash(o.storedHash, hash)) {
        snapshot.forget(hash);
        return answer("invalid_key", false, { quota: null });
      } else {
        snapshot.remember({ hash, keyId: o.keyId, accountId: o.accountId, status: o.status });
      }
      const ids = { accountId: o.accountId, keyId: o.keyId };
      if (o.decision === "allow" && o.credits) {
        // Paid from credits: a credit lease, not counted in the windows (their values as they are).
        metrics.creditsDrawn.inc(o.credits.drawn);
        return answer("allow", true, {
          ...ids,
          quota: quotaOf(o),
          credits: o.credits,
          lease: { id: leaseId, units: o.units, ttlMs: deps.lease.ttlMs },
        });
      }
      switch (o.decision) {
        case "allow": {
          metrics.leaseUnitsGranted.inc(o.units);
          // `quota` is this call's values (the lease's first unit); the gateway numbers the rest.
          const first = { ...o, dayUsed: o.dayUsed - o.units + 1, monthUsed: o.monthUsed - o.units + 1 };
          // A lease ends with its UTC day, so no unit is served under a day it was not counted in.
          const untilDayEnd = windows.dayTtlMs - WINDOW_GRACE_MS;
          return answer("allow", true, {
            ...ids,
            quota: quotaOf(first),
            dayWindow: windows.day,
            monthWindow: windows.month,
            lease: {
              id: leaseId,
              units: o.units,
              ttlMs: Math.max(0, Math.min(deps.lease.ttlMs, untilDayEnd)),
            },
          });
        }
        case "subscription_inactive":
          return answer(o.decision, false, { ...ids, quota: null });
        default:
          // Refused by a window or the burst guard: not counted; the current values still
          // go back (spec 7: a volume 429 carries the X-Quota-* headers).
          return answer(o.decision, false, { ...ids, quota: quotaOf(o) });
      }
    },
  };
}
