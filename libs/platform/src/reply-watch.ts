/**
 * Whether a connection still answers, as a policy-free state machine (the caller owns the clock, the
 * probe and what to do about a silent link): a probe goes out every `everyMs` while none is out; one
 * unanswered for `silentMs` makes the link suspect, and the caller decides (`decided`) whether to give
 * it up or to look again `silentMs` later. For links whose client has no deadline on a sent request
 * (node-redis): on a link that goes silent without a reset, every request sent waits for the kernel
 * to give the connection up, minutes later.
 */
export interface ReplyWatchOptions {
  /** How often a probe goes out while none is waiting. */
  everyMs: number;
  /** A probe unanswered this long: the link is suspect. */
  silentMs: number;
}

export type ReplyWatchStep = "probe" | "wait" | "silent";

export function replyWatch({ everyMs, silentMs }: ReplyWatchOptions) {
  let sentAt: number | undefined;
  let probe = 0;
  let lastTick: number | undefined;
  let deciding = false;
  return {
    /**
     * What to do at `now`: send a probe (then `sent`), wait, or decide about a silent link (then
     * `decided`). A tick that comes late (this process's own loop was blocked) never finds the link
     * silent: the probe's answer may be read only after it; the next tick on time decides.
     */
    tick(now: number, linkUp: boolean): ReplyWatchStep {
      const late = lastTick !== undefined && now - lastTick > 2 * everyMs;
      lastTick = now;
      if (deciding) return "wait";
      if (sentAt !== undefined) {
        if (now - sentAt < silentMs || late) return "wait";
        deciding = true;
        return "silent";
      }
      return linkUp ? "probe" : "wait";
    },
    /** A probe went out at `now`; the token names it to `settled`. */
    sent(now: number): number {
      sentAt = now;
      return ++probe;
    },
    /** Probe `token` was answered or failed (the link failed on its own): the next may go. */
    settled(token: number): void {
      if (token === probe) sentAt = undefined;
    },
    /** Whether a probe is still unanswered (a silent link's may be answered while the caller decides). */
    waiting(): boolean {
      return sentAt !== undefined;
    },
    /**
     * The caller's decision about a silent link, at `now`: given up (the next link is probed afresh),
     * or kept (its probe still out, looked at again `silentMs` later).
     */
    decided(now: number, keep: boolean): void {
      deciding = false;
      sentAt = keep && sentAt !== undefined ? now : undefined;
    },
  };
}
