import type { z } from "zod";
import { SETTLEMENT_V1, settlementEventV1 } from "./settlement.v1.ts";
import { SETTLEMENT_V2, settlementEventV2 } from "./settlement.v2.ts";
import { USAGE_V1, usageEventV1 } from "./usage.v1.ts";
import { USAGE_V2, usageBatchV2 } from "./usage.v2.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** A durable JetStream stream and the event subjects it stores. */
export interface StreamSpec {
  name: string;
  subjects: string[];
  /** How long messages are kept. */
  maxAgeMs: number;
  /** How long a Nats-Msg-Id is remembered for publish dedupe (at least an hour). */
  duplicateWindowMs: number;
}

/** Every stream Tollgate uses. One stream per event family, file storage. */
export const STREAMS: readonly StreamSpec[] = [
  {
    name: "TOLLGATE_USAGE",
    subjects: [USAGE_V1, USAGE_V2],
    maxAgeMs: 30 * DAY_MS,
    duplicateWindowMs: 2 * HOUR_MS,
  },
  {
    name: "TOLLGATE_SETTLEMENT",
    subjects: [SETTLEMENT_V1, SETTLEMENT_V2],
    maxAgeMs: 90 * DAY_MS,
    duplicateWindowMs: 2 * HOUR_MS,
  },
];

/** Every event: its subject (versioned) and its one schema. Add new versions here. */
export const EVENTS = {
  [USAGE_V1]: usageEventV1,
  [USAGE_V2]: usageBatchV2,
  [SETTLEMENT_V1]: settlementEventV1,
  [SETTLEMENT_V2]: settlementEventV2,
} as const;

export type EventSubject = keyof typeof EVENTS;
export type EventOf<S extends EventSubject> = z.infer<(typeof EVENTS)[S]>;

function isEventSubject(subject: string): subject is EventSubject {
  return Object.hasOwn(EVENTS, subject);
}

/** Events safeParseEvent found to fit: publishing them does not parse them again. */
const checked = new WeakSet<object>();

/**
 * Validates an event against its subject's schema without throwing; an event that fits comes back
 * marked, so `publish` takes it without a second parse (give it as it came back, unchanged).
 */
export function safeParseEvent<S extends EventSubject>(
  subject: S,
  event: unknown,
): z.ZodSafeParseResult<EventOf<S>> {
  if (!isEventSubject(subject)) throw new Error(`unknown event subject "${subject}"`);
  const result = EVENTS[subject].safeParse(event) as z.ZodSafeParseResult<EventOf<S>>;
  if (result.success) checked.add(result.data as object);
  return result;
}

/** An event that came back from safeParseEvent. */
export function isCheckedEvent(event: unknown): boolean {
  return typeof event === "object" && event !== null && checked.has(event);
}

/** Validates an event against its subject's schema; throws a ZodError when it does not fit. */
export function parseEvent<S extends EventSubject>(subject: S, event: unknown): EventOf<S> {
  if (!isEventSubject(subject)) throw new Error(`unknown event subject "${subject}"`);
  return EVENTS[subject].parse(event) as EventOf<S>;
}

/**
 * A namespace isolates a whole set of streams on a shared NATS server (tests, several
 * local stacks): subjects become `<namespace>.<subject>` and streams `<STREAM>_<NAMESPACE>`.
 * The default (empty) namespace is production.
 */
export function natsSubject(subject: string, namespace = ""): string {
  return namespace ? `${namespace}.${subject}` : subject;
}

export function streamSpecFor(subject: string, namespace = ""): StreamSpec {
  const spec = STREAMS.find((s) => s.subjects.includes(subject));
  if (!spec) throw new Error(`no stream stores subject "${subject}"`);
  if (!namespace) return spec;
  return {
    ...spec,
    name: `${spec.name}_${namespace.toUpperCase().replace(/[^A-Z0-9_-]/g, "_")}`,
    subjects: spec.subjects.map((s) => natsSubject(s, namespace)),
  };
}
