/**
 * The two quota windows (spec 8): the UTC day, reset at 00:00 UTC, and the calendar
 * month, reset at 00:00 UTC on the 1st. Window ids are plain dates so every replica and
 * every refund computes the same Redis key from a timestamp.
 */
export interface Windows {
  /** "2026-11-21" */
  day: string;
  /** "2026-11" */
  month: string;
  /** Counter lifetimes: to the window's end plus a grace for late refunds. */
  dayTtlMs: number;
  monthTtlMs: number;
}

/** A refund reported just after midnight still finds yesterday's counter. */
export const WINDOW_GRACE_MS = 60 * 60 * 1000;
const GRACE_MS = WINDOW_GRACE_MS;
const DAY_MS = 24 * 60 * 60 * 1000;

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

export function dayId(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

export function monthId(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}`;
}

export function windowsAt(nowMs: number): Windows {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const dayEnd = Date.UTC(y, m, d.getUTCDate() + 1);
  const monthEnd = Date.UTC(y, m + 1, 1);
  return {
    day: dayId(nowMs),
    month: monthId(nowMs),
    dayTtlMs: dayEnd - nowMs + GRACE_MS,
    monthTtlMs: monthEnd - nowMs + GRACE_MS,
  };
}

/** The `count` most recent UTC days ending today, oldest first. */
export function recentDays(nowMs: number, count: number): string[] {
  const days: string[] = [];
  for (let i = count - 1; i >= 0; i--) days.push(dayId(nowMs - i * DAY_MS));
  return days;
}

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;
const MONTH_RE = /^\d{4}-\d{2}$/;

export function isDayId(s: string): boolean {
  return DAY_RE.test(s);
}

export function isMonthId(s: string): boolean {
  return MONTH_RE.test(s);
}
