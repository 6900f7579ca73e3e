// The stores the payment contract suites run against, each written twice — a Redis Lua script and
// its in-memory stand-in — over one Redis prefix per file: reservation stores (stores.contract,
// attempt-limits.contract), mppx's state (mppx-state.contract) and the first answers of payments
// carrying a payment identifier (answers.contract). One suite definition per
// contract runs against both.
import {
  type MppxState,
  memoryMppxState,
  type Retention,
  redisMppxState,
} from "../../libs/payment-rails/src/mppx-store.ts";
import { type AnswerStore, MemoryAnswerStore } from "../../services/payment-verifier/src/stores/answers.ts";
import { RedisAnswerStore } from "../../services/payment-verifier/src/stores/answers-redis.ts";
import type { ReservationStore } from "../../services/payment-verifier/src/stores/reservations.ts";
import { MemoryReservationStore } from "../../services/payment-verifier/src/stores/reservations-memory.ts";
import { RedisReservationStore } from "../../services/payment-verifier/src/stores/reservations-redis.ts";
import { testRedis } from "../support/redis.ts";
import { testCluster } from "../support/redis-cluster.ts";
import { uniqueId } from "./support.ts";

/**
 * Connects to the machine's Redis and to the fixture Redis Cluster for the file's tests (under a
 * prefix of its own) and makes each store on both, beside its in-memory stand-in.
 */
export function useContractStores() {
  const prefix = `${uniqueId("test:pvstores:")}:`;
  const redis = testRedis(prefix);
  const cluster = testCluster(prefix);

  const stores: [string, () => ReservationStore][] = [
    ["Redis (Lua)", () => new RedisReservationStore(redis, prefix)],
    ["Redis Cluster (Lua)", () => new RedisReservationStore(cluster(), prefix)],
    ["in-memory stand-in", () => new MemoryReservationStore()],
  ];

  const mppxStates: [string, (retention?: Retention) => MppxState][] = [
    [
      "Redis (Lua compare-and-set, SET NX PXAT)",
      (retention) => redisMppxState(redis, `${prefix}mpp:`, retention),
    ],
    [
      "Redis Cluster (Lua compare-and-set, SET NX PXAT)",
      (retention) => redisMppxState(cluster(), `${prefix}mpp:`, retention),
    ],
    ["in-memory stand-in", (retention) => memoryMppxState(retention)],
  ];

  const answerStores: [string, () => AnswerStore][] = [
    ["Redis (Lua)", () => new RedisAnswerStore(redis, prefix)],
    ["Redis Cluster (Lua)", () => new RedisAnswerStore(cluster(), prefix)],
    ["in-memory stand-in", () => new MemoryAnswerStore()],
  ];

  return { prefix, redis, stores, mppxStates, answerStores };
}
