// The one retry loop for clean-ups that must land once Redis answers again (the signer lock's late
// unlocks, quota-meter's late releases): every item lands once, in order, none past its deadline,
// and a long outage keeps only the newest.
import { retryLater } from "@tollgate/platform/retry-later";
import { describe, expect, it } from "vitest";
import { eventually, sleep } from "../support/eventually.ts";

/** A store that refuses every attempt while `down`, and records what landed. */
function store() {
  const landed: string[] = [];
  const s = {
    down: true,
    landed,
    refused: 0,
    attempt: async (item: string) => {
      if (s.down) {
        s.refused++;
        throw new Error("store unreachable");
      }
      landed.push(item);
    },
  };
  return s;
}

describe("retryLater", () => {
  it("lands each item once, in order, once the store answers; one per key", async () => {
    const s = store();
    const later = retryLater(s.attempt, { everyMs: 10 });
    const until = Date.now() + 60_000;
    later("a", "a1", until);
    later("b", "b", until);
    later("a", "a2", until); // the same key again: the newer item replaces it
    await eventually(
      () => s.refused,
      (n) => n >= 4,
      5_000,
      5,
    ); // retried while down
    expect(s.landed).toEqual([]);
    s.down = false;
    await eventually(() => s.landed.length, 2, 5_000, 5);
    expect(s.landed).toEqual(["a2", "b"]);
    // time-based: nothing lands twice: five retry periods in which no attempt may land again.
    await sleep(50);
    expect(s.landed).toEqual(["a2", "b"]);
  });

  it("gives up an item past its deadline", async () => {
    const s = store();
    const later = retryLater(s.attempt, { everyMs: 10 });
    const lapses = Date.now() + 20;
    later("lapsing", "lapsing", lapses);
    later("kept", "kept", Date.now() + 60_000);
    // Down until the deadline has passed and the loop has tried again after it.
    await eventually(() => Date.now() > lapses && s.refused >= 4, true, 5_000, 5);
    const refused = s.refused;
    await eventually(
      () => s.refused,
      (n) => n > refused,
      5_000,
      5,
    );
    s.down = false;
    await eventually(() => s.landed.length, 1, 5_000, 5);
    // time-based: the lapsed item must not land in the retry periods after the kept one did.
    await sleep(50);
    expect(s.landed).toEqual(["kept"]);
  });

  it("keeps the newest `max` when more wait (a long outage)", async () => {
    const s = store();
    const later = retryLater(s.attempt, { everyMs: 10, max: 2 });
    for (const k of ["x", "y", "z"]) later(k, k, Date.now() + 60_000);
    s.down = false;
    await eventually(() => s.landed.length, 2, 5_000, 5);
    // time-based: the dropped oldest must not land in the retry periods after.
    await sleep(50);
    expect(s.landed).toEqual(["y", "z"]);
  });
});
