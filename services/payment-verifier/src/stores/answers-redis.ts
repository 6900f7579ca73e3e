// The answer store (answers.ts) on Redis, shared by every replica: one hash per payer and
// identifier under `<prefix>answer:`, each step one Lua script, atomic per key, each write with
// its TTL. A step whose reply was lost is run again once Redis answers: each recognises its own
// earlier run (the same holder), so it answers what the first run did.
import type { Redis } from "@tollgate/platform";
import { runAgainIfLost } from "@tollgate/platform/redis";
import type { AnswerRecord, AnswerStore, KeptAnswer } from "./answers.ts";

/** How long a step whose reply was lost is tried again (the settle path's read-back window). */
const AGAIN_MS = 5_000;

// KEYS[1] the record; ARGV payment, holder, request id, ttl ms. A record of the same holder is its own.
const CLAIM = `
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder == ARGV[2] then return {1} end
if holder then return {0, redis.call('HGETALL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'state', 'pending', 'payment', ARGV[1], 'holder', ARGV[2], 'request_id', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1}
`;

// KEYS[1] the record; ARGV holder, status, headers (JSON), body, ttl ms.
const KEEP = `
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
if redis.call('HGET', KEYS[1], 'state') == 'answered' then return 1 end
redis.call('HSET', KEYS[1], 'state', 'answered', 'status', ARGV[2], 'headers', ARGV[3], 'body', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`;

// KEYS[1] the record; ARGV holder. Only a pending claim of that holder.
const FORGET = `
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
if redis.call('HGET', KEYS[1], 'state') ~= 'pending' then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

function fromFields(h: Record<string, string>): AnswerRecord | undefined {
  const { state, payment = "", holder = "", request_id: requestId = "" } = h;
  if (state === "pending") return { state, payment, holder, requestId };
  if (state !== "answered") return undefined;
  const answer: KeptAnswer = {
    status: Number(h.status),
    headers: JSON.parse(h.headers ?? "[]") as KeptAnswer["headers"],
    body: h.body ?? "",
  };
  return { state, payment, holder, requestId, answer };
}

function pairs(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i] as string] = list[i + 1] as string;
  return out;
}

export class RedisAnswerStore implements AnswerStore {
  readonly kind = "redis" as const;
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = `${prefix}answer:`;
  }

  async find(key: string): Promise<AnswerRecord | undefined> {
    return fromFields(await this.#redis.hGetAll(this.#prefix + key));
  }

  async claim(key: string, payment: string, holder: string, requestId: string, ttlMs: number) {
    const reply = (await runAgainIfLost(
      () =>
        this.#redis.eval(CLAIM, {
          keys: [this.#prefix + key],
          arguments: [payment, holder, requestId, String(Math.max(1, Math.ceil(ttlMs)))],
        }),
      AGAIN_MS,
    )) as [number, string[]?];
    if (reply[0] === 1) return { ok: true as const };
    const current = fromFields(pairs(reply[1] ?? []));
    // A record that lapsed between the two reads of the script cannot be: it is one script.
    if (!current) throw new Error("answer store: a claim found a record it cannot read");
    return { ok: false as const, current };
  }

  async keep(key: string, holder: string, answer: KeptAnswer, ttlMs: number): Promise<boolean> {
    const reply = await runAgainIfLost(
      () =>
        this.#redis.eval(KEEP, {
          keys: [this.#prefix + key],
          arguments: [
            holder,
            String(answer.status),
            JSON.stringify(answer.headers),
            answer.body,
            String(Math.max(1, Math.ceil(ttlMs))),
          ],
        }),
      AGAIN_MS,
    );
    return reply === 1;
  }

  async forget(key: string, holder: string): Promise<boolean> {
    // Run again after a lost reply it answers 0 (deleted already): the outcome is the same.
    const reply = await runAgainIfLost(
      () => this.#redis.eval(FORGET, { keys: [this.#prefix + key], arguments: [holder] }),
      AGAIN_MS,
    );
    return reply === 1;
  }

  async close(): Promise<void> {}
}
