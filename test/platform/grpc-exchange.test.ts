// The Exchange transport (libs/platform/src/grpc-exchange.ts): unary calls carried as messages on
// open streams, between a real grpc-js server and client on loopback. The service is
// payment-verifier's contract with handlers of this test's own (the transport is what is tested,
// not the payment core): every answer and failure a caller sees is the unary call's, deadlines and
// the mesh policy hold per call, a broken or draining stream fails its calls UNAVAILABLE (what the
// gateway sends again), and a server without Exchange is called unary.
import { type CallError, connectionGraceMs, createClient, generateMeshToken, grpc } from "@tollgate/platform";
import { describe, expect, it } from "vitest";
import { sleep, until } from "../support/eventually.ts";
import {
  client,
  clients,
  dashboardToken,
  definition,
  failure,
  gatewayToken,
  resource,
  type Seen,
  server,
} from "./exchange.support.ts";

describe("calls carried on Exchange streams (payment-verifier's contract, handlers of this test's own: the transport is the subject)", () => {
  it("500 concurrent calls each get their own answer, on streams (no unary call), counted per method", async () => {
    const seen: Seen[] = [];
    const { address, registry } = await server({ seen });
    const c = client(address);
    const ids = Array.from({ length: 500 }, (_, i) => `r${i}`);
    const answers = await Promise.all(
      ids.map((requestId, i) =>
        i % 2
          ? c.call("Verify", { requestId, resource: resource(), credentials: [], client: requestId })
          : c.call("Settle", {
              requestId,
              paymentId: "p",
              resource: resource(String(i % 7)),
              credentials: [],
            }),
      ),
    );
    answers.forEach((answer, i) => {
      if (i % 2) expect(answer).toMatchObject({ valid: true, paymentId: `p-r${i}`, payer: `r${i}` });
      else expect(answer).toMatchObject({ settled: true, reason: `r${i}` });
    });
    expect(seen).toHaveLength(500);
    expect(seen.every((s) => !s.unary)).toBe(true);
    // The server's latency metric counts each carried call under its own method, as a unary call.
    const counted = async (method: string) =>
      (await registry.getSingleMetric("grpc_server_handling_seconds")?.get())?.values.find(
        (v) =>
          (v as { metricName?: string }).metricName === "grpc_server_handling_seconds_count" &&
          v.labels.grpc_method === method &&
          v.labels.grpc_code === "OK",
      )?.value;
    expect(await counted("Verify")).toBe(250);
    expect(await counted("Settle")).toBe(250);
    // DescribeMethods is not in the envelope: it stays a unary call.
    await c.call("DescribeMethods", {});
    expect(seen.at(-1)).toMatchObject({ method: "DescribeMethods", unary: true });
    // Four streams carried them all.
    expect(new Set(seen.filter((s) => !s.unary).map((s) => s.stream)).size).toBe(4);
  });

  it("a handler's failure reaches the caller as the unary call's: status, catalog code and detail", async () => {
    const { address } = await server();
    const streamed = client(address);
    const plain = createClient(definition, address, {
      service: "payment-verifier",
      defaultDeadlineMs: 5_000,
      token: gatewayToken,
    });
    clients.push(plain);
    for (const reason of ["refuse", "crash"]) {
      const req = { requestId: "r", paymentId: "p", reason, resource: resource(), credentials: [] };
      const viaStream = await failure(streamed.call("Release", req));
      const viaUnary = await failure(plain.call("Release", req));
      expect(viaStream).toEqual(viaUnary);
    }
    expect(
      await failure(streamed.call("Release", { requestId: "r", paymentId: "p", reason: "refuse" })),
    ).toEqual({
      grpcCode: grpc.status.FAILED_PRECONDITION,
      code: "payment_invalid",
      message: "refused on purpose",
      detail: { parameter: "payment_id" },
    });
  });

  it("keeps each call's deadline: a call never answered fails DEADLINE_EXCEEDED on time; the handler sees the deadline; the stream serves on", async () => {
    const { address } = await server();
    const c = client(address);
    const started = Date.now();
    const never = c.call(
      "Settle",
      { requestId: "slow", paymentId: "p", resource: resource("-1"), credentials: [] },
      { deadlineMs: 300 },
    );
    const answered = await c.call(
      "Settle",
      { requestId: "fast", paymentId: "p", resource: resource("0"), credentials: [] },
      { deadlineMs: 2_000 },
    );
    // The handler's deadline is the caller's: now + 2 s, give or take the trip.
    expect(Math.abs(Number(answered.transaction) - (started + 2_000))).toBeLessThan(500);
    expect((await failure(never)).grpcCode).toBe(grpc.status.DEADLINE_EXCEEDED);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(300);
    expect(took).toBeLessThan(900);
    await expect(c.call("Verify", { requestId: "after", resource: resource() })).resolves.toMatchObject({
      paymentId: "p-after",
    });
  });

  it("holds the mesh policy: no token or a wrong one is refused for every call, a caller outside its lane per method", async () => {
    const seen: Seen[] = [];
    const { address, registry } = await server({ seen });
    for (const token of [undefined, generateMeshToken()]) {
      const c = client(address, { token });
      const refused = await failure(c.call("Verify", { requestId: "x", resource: resource() }));
      expect(refused.grpcCode).toBe(grpc.status.UNAUTHENTICATED);
      expect(refused.code).toBe("mesh_unauthenticated");
    }
    const dashboard = client(address, { token: dashboardToken });
    const denied = await failure(
      dashboard.call("Settle", { requestId: "x", paymentId: "p", resource: resource() }),
    );
    expect(denied).toMatchObject({ grpcCode: grpc.status.PERMISSION_DENIED, code: "mesh_permission_denied" });
    await expect(dashboard.call("Verify", { requestId: "ok", resource: resource() })).resolves.toMatchObject({
      paymentId: "p-ok",
    });
    // Only the allowed call ran a handler; every refusal is counted.
    expect(seen.map((s) => s.method)).toEqual(["Verify"]);
    const refusals = (await registry.getSingleMetric("grpc_server_refused_total")?.get())?.values ?? [];
    const count = (method: string, reason: string) =>
      refusals.find((v) => v.labels.grpc_method === method && v.labels.reason === reason)?.value;
    expect(count("Exchange", "missing_token")).toBe(1);
    expect(count("Exchange", "unknown_token")).toBe(1);
    expect(count("Settle", "not_allowed")).toBe(1);
  });

  it("a server without Exchange (an older replica) is called unary, and the answers are the same", async () => {
    const seen: Seen[] = [];
    const { address } = await server({ exchange: false, seen });
    const c = client(address);
    const answers = await Promise.all(
      [1, 2, 3].map((i) => c.call("Verify", { requestId: `r${i}`, resource: resource(), client: "c" })),
    );
    expect(answers.map((a) => a.paymentId)).toEqual(["p-r1", "p-r2", "p-r3"]);
    expect(seen.map((s) => s.unary)).toEqual([true, true, true]);
    await expect(c.call("Verify", { requestId: "r4", resource: resource() })).resolves.toMatchObject({
      paymentId: "p-r4",
    });
    expect(seen.at(-1)?.unary).toBe(true);
  });

  it("a replica that goes away mid-call fails the call UNAVAILABLE, the failure the gateway sends a call again on", async () => {
    const seen: Seen[] = [];
    const first = await server({ seen });
    const c = client(first.address);
    const pending = c.call("Settle", {
      requestId: "r",
      paymentId: "p",
      resource: resource("-1"),
      credentials: [],
    });
    await until("the call reached the server", () => seen.length === 1, 30_000, 5);
    first.handle.server.forceShutdown();
    expect((await failure(pending)).grpcCode).toBe(grpc.status.UNAVAILABLE);
  });

  it("a draining server answers the calls it holds, ends its streams, and shuts down without waiting them out", async () => {
    const seen: Seen[] = [];
    const { handle, address } = await server({ seen });
    const c = client(address);
    const held = c.call("Settle", {
      requestId: "held",
      paymentId: "p",
      resource: resource("400"),
      credentials: [],
    });
    await until("the call reached the server", () => seen.length === 1, 30_000, 5);
    const shutdown = handle.shutdown().then(() => "closed" as const);
    // time-based: a stream left open holds the shutdown 20 s (then forced); 15 s is far beyond a
    // loaded machine's drain of one 400 ms call, so "forced" means the server waited its streams out.
    const forced = new Promise<"forced">((r) => setTimeout(() => r("forced"), 15_000).unref());
    await expect(held).resolves.toMatchObject({ reason: "held" });
    expect(await Promise.race([shutdown, forced])).toBe("closed");
    expect((await failure(c.call("Verify", { requestId: "late", resource: resource() }))).grpcCode).toBe(
      grpc.status.UNAVAILABLE,
    );
  });

  it("while one of two replicas drains, every call is answered: those it refuses go again to the other", async () => {
    const seenA: Seen[] = [];
    const seenB: Seen[] = [];
    const a = await server({ seen: seenA });
    const b = await server({ seen: seenB });
    // One target, two replicas, balanced round robin as a headless Service's pods are. Streams opened
    // before both connections are up all go to the first one: rotation spreads them.
    const c = client(`ipv4:${a.address},${b.address}`, { rotateMs: 100 });
    const settle = (requestId: string, ms: number) =>
      c.call("Settle", { requestId, paymentId: "p", resource: resource(String(ms)), credentials: [] });
    for (let i = 0; i < 30 && !(seenA.length && seenB.length); i++) {
      await settle(`warm${i}`, 0);
      // time-based: paces the warm-up calls so the client's stream rotation (100 ms) spreads them.
      await sleep(30);
    }
    expect(seenA.length).toBeGreaterThan(0);
    expect(seenB.length).toBeGreaterThan(0);
    const warm = seenA.length + seenB.length;
    // Streams to both replicas, each with a call in flight when A starts to drain.
    const held = Array.from({ length: 8 }, (_, i) => settle(`held${i}`, 300));
    await until(
      "the held calls reached the replicas",
      () => seenA.length + seenB.length === warm + 8,
      30_000,
      5,
    );
    const shutdown = a.handle.shutdown();
    const during: Promise<{ reason: string }>[] = [];
    for (let i = 0; i < 40; i++) {
      during.push(settle(`during${i}`, 0));
      // time-based: paces the calls made while A drains, so they span its drain.
      await sleep(10);
    }
    const answers = await Promise.all([...held, ...during]);
    expect(answers.map((x) => x.reason)).toEqual([
      ...held.map((_, i) => `held${i}`),
      ...during.map((_, i) => `during${i}`),
    ]);
    await shutdown;
    // Each call ran once, on one replica or the other.
    expect(seenA.length + seenB.length).toBe(warm + 48);
  });

  it("rotates its streams: a stream past its time ends once its calls are answered, and calls go on", async () => {
    const seen: Seen[] = [];
    const { address } = await server({ seen });
    const c = client(address, { rotateMs: 200 });
    for (let round = 0; round < 4; round++) {
      const answers = await Promise.all(
        [0, 1, 2, 3, 4].map((i) =>
          c.call("Settle", {
            requestId: `r${round}.${i}`,
            paymentId: "p",
            resource: resource(String(i * 60)),
            credentials: [],
          }),
        ),
      );
      expect(answers.map((a) => a.reason)).toEqual([0, 1, 2, 3, 4].map((i) => `r${round}.${i}`));
      // time-based: each round starts past the streams' time (rotateMs 200), which is the subject.
      await sleep(250);
    }
    expect(seen.filter((s) => !s.unary)).toHaveLength(20);
    // Each round after the first opened streams anew (4 at most per round).
    expect(new Set(seen.map((s) => s.stream)).size).toBeGreaterThan(8);
  });

  it("a connection the server ends for its age cuts no call short: its last streams' calls are all answered", async () => {
    // At 1 s old a connection is told to go; a stream opened on it just before takes calls for its
    // rotation (500 ms) more, each up to its deadline (callMax, 1.5 s). With a grace shorter than
    // both (it was 30 s against 30 s of rotation and 30 s of deadline), such calls broke with the
    // connection (INTERNAL "RST_STREAM", UNAVAILABLE): a Verify answered 503, a Settle that may
    // have collected answered 503. The margin is cut to 200 ms so connections do end in the run.
    const seen: Seen[] = [];
    const { address } = await server({
      seen,
      connections: { maxAgeMs: 1_000, graceMs: connectionGraceMs(500, 1_500, 200) },
    });
    const c = client(address, { rotateMs: 500, callMaxMs: 1_500 });
    const failed: string[] = [];
    let answered = 0;
    const until = Date.now() + 6_000;
    const loop = async (lane: number) => {
      for (let i = 0; Date.now() < until; i++) {
        const work = 100 + ((lane * 7 + i * 13) % 200);
        await c
          .call(
            "Settle",
            { requestId: `${lane}.${i}`, paymentId: "p", resource: resource(String(work)), credentials: [] },
            { deadlineMs: 1_500 },
          )
          .then(
            () => answered++,
            (err: CallError) => failed.push(`${grpc.status[err.failure.grpcCode]} ${err.failure.message}`),
          );
      }
    };
    await Promise.all([0, 1, 2, 3].map(loop));
    expect(failed).toEqual([]);
    expect(answered).toBeGreaterThan(60);
    expect(seen.every((s) => !s.unary)).toBe(true);
  });

  it("a call whose deadline is longer than a stream may carry goes unary", async () => {
    const seen: Seen[] = [];
    const { address } = await server({ seen });
    const c = client(address, { callMaxMs: 1_000 });
    const short = await c.call(
      "Settle",
      { requestId: "short", paymentId: "p", resource: resource(), credentials: [] },
      { deadlineMs: 1_000 },
    );
    const long = await c.call(
      "Settle",
      { requestId: "long", paymentId: "p", resource: resource(), credentials: [] },
      { deadlineMs: 1_001 },
    );
    expect([short.reason, long.reason]).toEqual(["short", "long"]);
    expect(seen.map((s) => s.unary)).toEqual([false, true]);
  });

  it("an answer that cannot be encoded fails its own call INTERNAL; the calls beside it on its stream are answered", async () => {
    const seen: Seen[] = [];
    const { address } = await server({ seen });
    const c = client(address);
    // Calls in flight on each of the client's four streams (round robin) when the bad answer is
    // written, held long enough that a slow machine writes it while they are.
    const held = Array.from({ length: 8 }, (_, i) =>
      c.call("Settle", {
        requestId: `held${i}`,
        paymentId: "p",
        resource: resource("1500"),
        credentials: [],
      }),
    );
    await until("the held calls reached the server", () => seen.length === 8, 5_000, 5);
    const bad = await failure(
      c.call("Verify", { requestId: "v", resource: resource(), credentials: [], client: "unencodable" }),
    );
    expect(bad.grpcCode).toBe(grpc.status.INTERNAL);
    expect((await Promise.all(held)).map((a) => a.reason)).toEqual(held.map((_, i) => `held${i}`));
    // Every stream serves on, the bad answer's own included.
    const next = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        c.call("Verify", { requestId: `next${i}`, resource: resource(), credentials: [], client: `me${i}` }),
      ),
    );
    expect(next.map((n) => n.payer)).toEqual(["me1", "me2", "me3", "me4"]);
  });
});
