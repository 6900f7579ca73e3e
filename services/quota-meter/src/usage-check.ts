// Per-record work of ReportUsage kept to what the usage event needs: the call's time normalised
// without a Date round trip when it already has the normal form, and the event's schema run once
// per event rather than once per record and again on publishing.
import { safeParseEvent, USAGE_V2, type UsageBatchV2, type UsageCallV2 } from "@tollgate/events";

// "YYYY-MM-DDTHH:mm:ss.sssZ": the character each separator position must hold (0: a digit).
const FORM = [..."0000-00-00T00:00:00.000Z"].map((c) => (c === "0" ? 0 : c.charCodeAt(0)));
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

const digits = (s: string, at: number, n: number) => {
  let v = 0;
  for (let i = at; i < at + n; i++) v = v * 10 + s.charCodeAt(i) - 48;
  return v;
};

/** Whether `s` is exactly what `toISOString()` writes for some instant (so parsing it back changes nothing). */
function isIsoUtc(s: string): boolean {
  if (s.length !== FORM.length) return false;
  for (let i = 0; i < FORM.length; i++) {
    const c = s.charCodeAt(i);
    const want = FORM[i]!;
    if (want ? c !== want : c < 48 || c > 57) return false;
  }
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= DAYS[month - 1]! + (leap ? 1 : 0) &&
    digits(s, 11, 2) < 24 &&
    digits(s, 14, 2) < 60 &&
    digits(s, 17, 2) < 60
  );
}

/** A reported time as an RFC 3339 UTC timestamp: as given, else parsed, else `fallbackMs`. */
export function utcTime(reported: string, fallbackMs: number): string {
  if (isIsoUtc(reported)) return reported;
  const ms = Date.parse(reported);
  return new Date(Number.isNaN(ms) ? fallbackMs : ms).toISOString();
}

/**
 * The event for `calls` (and the records they came from), checked by the usage event's schema:
 * a call that does not fit is passed to `drop` and left out, the rest go (none: undefined). The
 * event comes back marked checked, so publishing does not parse it again. A batch that fails for
 * no call's fault (its id) throws the schema's error, as publishing it would.
 */
export function checkedBatch<R>(
  id: string,
  calls: UsageCallV2[],
  records: R[],
  drop: (record: R) => void,
): { batch: UsageBatchV2; records: R[] } | undefined {
  while (calls.length > 0) {
    const result = safeParseEvent(USAGE_V2, { id, calls });
    if (result.success) return { batch: result.data, records };
    const bad = new Set<number>();
    for (const issue of result.error.issues) {
      if (issue.path[0] === "calls" && typeof issue.path[1] === "number") bad.add(issue.path[1]);
    }
    if (bad.size === 0) throw result.error;
    for (const i of bad) if (records[i] !== undefined) drop(records[i]);
    calls = calls.filter((_, i) => !bad.has(i));
    records = records.filter((_, i) => !bad.has(i));
  }
  return undefined;
}
