import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Kv, MemoryKv, openKv } from "../../services/dashboard/src/kv.ts";
import { capturingLogger, cleanRedis } from "../quota-meter/helpers.ts";

// The dashboard's store written twice (Redis, and the in-memory stand-in of `pnpm start` without
// Redis): one contract for both.

const prefix = `test:dashkv${randomBytes(4).toString("hex")}:`;
const stores: Array<[string, () => Promise<Kv>]> = [
  ["memory", async () => new MemoryKv()],
  [
    "redis",
    () =>
      openKv({
        url: "redis://127.0.0.1:6379",
        prefix,
        connectTimeoutMs: 1500,
        standIn: false,
        logger: capturingLogger("dashboard").logger,
      }),
  ],
];

describe.each(stores)("dashboard store contract: %s", (kind, open) => {
  let kv: Kv;
  beforeAll(async () => {
    kv = await open();
    expect(kv.kind).toBe(kind);
  });
  afterAll(async () => {
    await kv.close();
    await cleanRedis(prefix);
  });

  it("take reads a value once: the second take finds nothing", async () => {
    await kv.set("n:a", "message", 60_000);
    expect(await kv.get("n:a")).toBe("message");
    expect(await kv.take("n:a")).toBe("message");
    expect(await kv.take("n:a")).toBeNull();
  });

  it("a value is gone after its time", async () => {
    await kv.set("n:b", "x", 30);
    await new Promise((r) => setTimeout(r, 60));
    expect(await kv.get("n:b")).toBeNull();
  });

  it("hit counts within a window that the first hit starts, then starts again", async () => {
    const first = await kv.hit("rate:a", 150);
    expect(first.count).toBe(1);
    expect(first.resetMs).toBeGreaterThan(0);
    expect(first.resetMs).toBeLessThanOrEqual(150);
    expect((await kv.hit("rate:a", 150)).count).toBe(2);
    const third = await kv.hit("rate:a", 150);
    expect(third.count).toBe(3);
    expect(third.resetMs).toBeLessThanOrEqual(first.resetMs);
    expect((await kv.hit("rate:other", 150)).count).toBe(1);
    await new Promise((r) => setTimeout(r, 200));
    expect((await kv.hit("rate:a", 150)).count).toBe(1);
  });
});
