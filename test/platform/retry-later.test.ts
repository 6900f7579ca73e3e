// The one retry loop for clean-ups that must land once Redis answers again (the signer lock's late
// unlocks, quota-meter's late releases): every item lands once, in order, none past its deadline,
// and a long outage keeps only the newest.
import { retryLater } from "@tollgate/platform/retry-later";
import { describe, expect, it } from "vitest";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A store that refuses every attempt while `down`, and records what landed. */
function store() {
  const landed: string[] = [];
  const s = {
    down: true,
    landed,
    attempt: async (item: string) => {
      if (s.down) throw new Error("store unreachable");
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
    await sleep(50);
    expect(s.landed).toEqual([]);
    s.down = false;
    await sleep(50);
    expect(s.landed).toEqual(["a2", "b"]);
    await sleep(50);
    expect(s.landed).toEqual(["a2", "b"]);
  });

  it("gives up an item past its deadline", async () => {
    const s = store();
    const later = retryLater(s.attempt, { everyMs: 10 });
    later("lapsing", "lapsing", Date.now() + 20);
    later("kept", "kept", Date.now() + 60_000);
    await sleep(60);
    s.down = false;
    await sleep(50);
    expect(s.landed).toEqual(["kept"]);
  });

  it("keeps the newest `max` when more wait (a long outage)", async () => {
    const s = store();
    const later = retryLater(s.attempt, { everyMs: 10, max: 2 });
    for (const k of ["x", "y", "z"]) later(k, k, Date.now() + 60_000);
    s.down = false;
    await sleep(50);
    expect(s.landed).toEqual(["y", "z"]);
  });
});
