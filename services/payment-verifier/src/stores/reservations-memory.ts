// The reservation store in one process's memory: the stand-in used when Redis is unreachable at
// startup (and by tests), implementing the same state machine as the Redis store (reservations.ts
// is the contract; the Lua in reservations-lua.ts is what each step mirrors).
import { MemoryAttemptLimiter } from "./attempt-limits.ts";
import {
  type Attempt,
  type BeginSettle,
  type Draw,
  isTakeover,
  type PaymentFacts,
  type ReleaseMark,
  type Reservation,
  type ReservationState,
  type ReservationStore,
  type ReserveResult,
  TAKEOVER_MARK,
} from "./reservations.ts";

/** A Verify retried for the same request: same mesh request id, the same call and the same credentials. */
function isRetryOf(current: Reservation, facts: PaymentFacts): boolean {
  return (
    current.state === "reserved" &&
    facts.requestId !== "" &&
    current.requestId === facts.requestId &&
    current.endpoint === facts.endpoint &&
    current.network === facts.network &&
    current.amount === facts.amount &&
    current.payer.toLowerCase() === facts.payer.toLowerCase() &&
    current.credential === facts.credential
  );
}

/** Single-node stand-in used when Redis is unreachable at startup: the same state machine, one process. */
export class MemoryReservationStore implements ReservationStore {
  readonly kind = "memory" as const;

  keyOf(_payer: string, raw: string): string {
    return raw;
  }
  readonly #entries = new Map<string, { reservation: Reservation; expiresAt: number }>();
  /** Liveness of the owners (replica ids) seen here: until when each is alive. */
  readonly #alive = new Map<string, number>();
  readonly #attempts = new MemoryAttemptLimiter();
  /** Penalties by name (lower case): until when. */
  readonly #penalties = new Map<string, number>();
  /** Release marks by key and release id (see release): what it freed, until when. */
  readonly #released = new Map<string, { freed: Reservation; until: number }>();
  /** Draws in flight by account (lower case), then by reservation key: amount and until when. */
  readonly #draws = new Map<string, Map<string, { amount: bigint; until: number }>>();
  /** The account of each reservation that draws (see #forgetDraw). */
  readonly #drawOf = new Map<string, string>();
  readonly #sweeper: NodeJS.Timeout;

  constructor() {
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);
      for (const [account, draws] of this.#draws) {
        for (const [key, d] of draws) if (d.until <= now) draws.delete(key);
        if (draws.size === 0) this.#draws.delete(account);
      }
      for (const [key, account] of this.#drawOf)
        if (!this.#draws.get(account)?.has(key)) this.#drawOf.delete(key);
      for (const [name, until] of this.#penalties) if (until <= now) this.#penalties.delete(name);
      for (const [key, mark] of this.#released) if (mark.until <= now) this.#released.delete(key);
    }, 30_000);
    this.#sweeper.unref();
  }

  #live(key: string): Reservation | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.reservation;
  }

  #put(key: string, reservation: Reservation, ttlMs: number): void {
    this.#entries.set(key, { reservation, expiresAt: Date.now() + ttlMs });
  }

  async get(key: string): Promise<Reservation | undefined> {
    const r = this.#live(key);
    return r && { ...r };
  }

  async reserve(
    key: string,
    token: string,
    facts: PaymentFacts,
    ttlMs: number,
    attempt?: Attempt,
    draw?: Draw,
  ): Promise<ReserveResult> {
    const penalized = attempt?.penalty
      ? (this.#penalties.get(attempt.penalty.toLowerCase()) ?? 0) - Date.now()
      : 0;
    if (penalized > 0) return { ok: false, current: undefined, penalizedMs: penalized };
    const limited = attempt && this.#attempts.take(attempt.checks, attempt.nowMs);
    if (limited) return { ok: false, current: undefined, limited };
    const current = this.#live(key);
    let taken: Extract<ReserveResult, { ok: true }>;
    if (!current) {
      const reservation: Reservation = {
        ...facts,
        state: "reserved",
        token,
        collected: "",
        hold: "",
        transaction: "",
        receipt: "",
        owner: "",
        attempt: "",
      };
      this.#put(key, reservation, ttlMs);
      taken = { ok: true, token, retried: false };
    } else if (isRetryOf(current, facts)) {
      taken = { ok: true, token: current.token, retried: true };
    } else {
      return { ok: false, current: { ...current } };
    }
    if (!draw) return taken;
    const now = attempt?.nowMs ?? Date.now();
    const account = draw.account.toLowerCase();
    const draws = this.#draws.get(account) ?? new Map<string, { amount: bigint; until: number }>();
    this.#draws.set(account, draws);
    if (!taken.retried) {
      draws.set(key, { amount: BigInt(draw.amount), until: now + Math.max(1, Math.round(draw.ttlMs)) });
      this.#drawOf.set(key, account);
    }
    let drawn = 0n;
    for (const [k, d] of draws) {
      if (d.until > now) drawn += d.amount;
      else draws.delete(k);
    }
    return { ...taken, drawn };
  }

  async countAttempt(attempt: Attempt): Promise<string | undefined> {
    return this.#attempts.take(attempt.checks, attempt.nowMs);
  }

  /** The reservation `key` no longer draws on its account (see FORGET_DRAW_LUA). */
  #forgetDraw(key: string): void {
    const account = this.#drawOf.get(key);
    if (account === undefined) return;
    this.#drawOf.delete(key);
    this.#draws.get(account)?.delete(key);
  }

  async markVerified(
    key: string,
    token: string,
    verified: { collected: string; hold: string },
  ): Promise<void> {
    const current = this.#live(key);
    if (current?.state !== "reserved" || current.token !== token) return;
    if (verified.collected !== "") this.#forgetDraw(key);
    current.collected = verified.collected;
    current.transaction = verified.collected;
    current.hold = verified.hold;
  }

  async beginSettle(
    key: string,
    token: string,
    requestId: string,
    ttlMs: number,
    owner: string,
    idleHere = false,
    attempt = "",
  ): Promise<BeginSettle> {
    const current = this.#live(key);
    const open = current?.state === "reserved" || current?.state === "settling"; // see BEGIN_SETTLE
    if (!current || !open || current.token !== token || current.requestId !== requestId) {
      return { ok: false, current: current && { ...current }, busy: false };
    }
    const takenOver = current.state === "settling";
    const idle = current.owner === owner && idleHere;
    if (takenOver && !idle && (current.owner === owner || this.#isAlive(current.owner))) {
      return { ok: false, current: { ...current }, busy: true };
    }
    const settling = {
      ...current,
      state: "settling" as const,
      owner,
      attempt: takenOver ? `${attempt}${TAKEOVER_MARK}` : attempt,
    };
    this.#put(key, settling, ttlMs);
    return { ok: true, reservation: { ...settling }, takenOver };
  }

  #isAlive(owner: string): boolean {
    return owner !== "" && (this.#alive.get(owner) ?? 0) > Date.now();
  }

  async heartbeat(owner: string, ttlMs: number): Promise<void> {
    this.#alive.set(owner, Date.now() + ttlMs);
  }

  async markSettled(
    key: string,
    token: string,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void> {
    const current = this.#live(key);
    if (current?.token !== token) return;
    this.#forgetDraw(key);
    this.#put(key, { ...current, state: "settled", transaction, receipt }, Math.max(1, retentionMs));
  }

  #deleteIf(
    key: string,
    token: string,
    state: ReservationState,
    requestId = "",
    keepDraw = false,
  ): Reservation | undefined {
    const current = this.#live(key);
    if (current?.state !== state || current.token !== token) return undefined;
    if (requestId !== "" && current.requestId !== requestId) return undefined;
    this.#entries.delete(key);
    if (!keepDraw) this.#forgetDraw(key);
    return current;
  }

  async drop(
    key: string,
    token: string,
    settling?: { owner: string; attempt: string },
    keepDraw = false,
  ): Promise<boolean> {
    const dropped = settling
      ? this.#deleteSettlingOf(key, token, settling.owner, settling.attempt, keepDraw)
      : this.#deleteIf(key, token, "settling", "", keepDraw);
    return dropped !== undefined;
  }

  async release(
    key: string,
    token: string,
    requestId: string,
    release?: ReleaseMark,
  ): Promise<Reservation | undefined> {
    const freed = this.#deleteIf(key, token, "reserved", requestId);
    if (!release) return freed;
    const markKey = `${key}\n${release.id}`;
    if (!freed) {
      const mark = this.#released.get(markKey);
      return mark && mark.until > Date.now() ? mark.freed : undefined;
    }
    this.#released.set(markKey, { freed, until: Date.now() + Math.max(1, Math.round(release.keepMs)) });
    return freed;
  }

  async abandon(
    key: string,
    token: string,
    owner: string,
    attempt: string,
  ): Promise<Reservation | undefined> {
    return isTakeover(attempt) ? undefined : this.#deleteSettlingOf(key, token, owner, attempt);
  }

  #deleteSettlingOf(
    key: string,
    token: string,
    owner: string,
    attempt: string,
    keepDraw = false,
  ): Reservation | undefined {
    const current = this.#live(key);
    if (attempt === "" || current?.owner !== owner || current.attempt !== attempt) return undefined;
    return this.#deleteIf(key, token, "settling", "", keepDraw);
  }

  async penalize(penalty: string, ms: number): Promise<void> {
    this.#penalties.set(penalty.toLowerCase(), Date.now() + Math.max(1, Math.round(ms)));
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#penalties.clear();
    this.#released.clear();
    this.#draws.clear();
    this.#drawOf.clear();
    this.#attempts.close();
    this.#entries.clear();
    this.#alive.clear();
  }
}
