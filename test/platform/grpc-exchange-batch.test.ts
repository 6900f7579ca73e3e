// Batches on Exchange streams (libs/platform/src/grpc-exchange.ts, proto/tollgate/mesh/v1/
// exchange.proto): the calls a caller makes in one turn of its event loop go in one message, and so
// do the answers a server has in one turn, but only to a side that announced it reads batches
// (`tollgate-exchange-batch`): replicas of the release before keep working in a rolling upgrade.
// Real grpc-js on loopback; the wire is read with a raw grpc-js stream where the test plays an
// older caller or an older server.
import { EXCHANGE_BATCH_KEY, grpc, MESH_TOKEN_KEY } from "@tollgate/platform";
import { describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.ts";
import { client, definition, failure, gatewayToken, resource, server } from "./exchange.support.ts";

const exchange = definition.service.Exchange as unknown as grpc.MethodDefinition<object, Envelope>;

interface Envelope {
  id: number;
  more?: Envelope[];
  [member: string]: unknown;
}

/** A raw Exchange stream: the messages written on it arrive as written; what comes back is kept. */
function rawStream(address: string, announce: boolean) {
  const raw = new grpc.Client(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set(MESH_TOKEN_KEY, gatewayToken);
  if (announce) metadata.set(EXCHANGE_BATCH_KEY, "1");
  const call = raw.makeBidiStreamRequest(
    exchange.path,
    exchange.requestSerialize,
    exchange.responseDeserialize,
    metadata,
  );
  const received: Envelope[] = [];
  let serverAnnounced = false;
  call.on("metadata", (m: grpc.Metadata) => {
    serverAnnounced = m.get(EXCHANGE_BATCH_KEY).length > 0;
  });
  call.on("data", (m: Envelope) => received.push(m));
  call.on("error", () => undefined);
  const answers = () => received.flatMap((m) => [m, ...(m.more ?? [])]);
  return {
    call,
    received,
    answers,
    announced: () => serverAnnounced,
    /** Until `n` answers are in (or 5 s). */
    async waitFor(n: number) {
      await eventually(() => answers().length >= n, true, 5_000, 10);
    },
    close() {
      call.end();
      raw.close();
    },
  };
}

const verify = (i: number) => ({
  id: i,
  timeoutMs: 5_000,
  verify: { requestId: `r${i}`, resource: resource(), credentials: [], client: `c${i}` },
});

describe("batches on Exchange streams", () => {
  it("a caller that announced batches gets the answers of one turn in one message, each matched to its call", async () => {
    const { address } = await server();
    const stream = rawStream(address, true);
    // 50 calls written in one message, as a new caller sends the calls of one turn.
    stream.call.write({ ...verify(1), more: Array.from({ length: 49 }, (_, i) => verify(i + 2)) });
    await stream.waitFor(50);
    expect(stream.announced()).toBe(true);
    const answers = stream.answers();
    expect(answers.map((a) => a.id).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    for (const a of answers) expect(a.verify).toMatchObject({ valid: true, payer: `c${a.id}` });
    // The handlers answered within one turn: far fewer messages than answers.
    expect(stream.received.length).toBeLessThan(10);
    stream.close();
  });

  it("a caller that did not announce batches (an older gateway) gets one answer per message", async () => {
    const { address } = await server();
    const stream = rawStream(address, false);
    for (let i = 1; i <= 50; i++) stream.call.write(verify(i));
    await stream.waitFor(50);
    expect(stream.received).toHaveLength(50);
    expect(stream.received.every((m) => !m.more?.length)).toBe(true);
    stream.close();
  });

  it("an answer that cannot be encoded fails its own call in a batch; the batch's other calls are answered", async () => {
    const { address } = await server();
    const c = client(address);
    // Answered, so the stream's announcement (its initial metadata, sent before any answer) is in.
    await c.call("Verify", { requestId: "warm", resource: resource(), credentials: [], client: "w" });
    // Made in one turn: they travel, and are answered, together.
    const calls = Array.from({ length: 12 }, (_, i) =>
      c.call("Verify", {
        requestId: `u${i}`,
        resource: resource(),
        credentials: [],
        client: i === 5 ? "unencodable" : `ok${i}`,
      }),
    );
    const bad = await failure(calls[5] as Promise<unknown>);
    expect(bad.grpcCode).toBe(grpc.status.INTERNAL);
    const others = await Promise.all(calls.filter((_, i) => i !== 5));
    expect(others.map((o) => o.payer)).toEqual(
      Array.from({ length: 12 }, (_, i) => `ok${i}`).filter((_, i) => i !== 5),
    );
  });

  /**
   * A server written with grpc-js alone, announcing batches or not (an older replica): it answers
   * each call it reads, one message per answer, and counts the messages and calls it read.
   */
  async function rawServer(announce: boolean) {
    const raw = new grpc.Server();
    const seen = { messages: 0, calls: 0 };
    raw.addService(definition.service, {
      Exchange: (call: grpc.ServerDuplexStream<Envelope, Envelope>) => {
        if (announce) {
          const metadata = new grpc.Metadata();
          metadata.set(EXCHANGE_BATCH_KEY, "1");
          call.sendMetadata(metadata);
        }
        call.on("data", (m: Envelope) => {
          seen.messages++;
          for (const one of [m, ...(m.more ?? [])]) {
            seen.calls++;
            call.write({
              id: one.id,
              verify: { valid: true, payer: (one.verify as { client: string }).client },
            });
          }
        });
        call.on("end", () => call.end());
      },
    } as grpc.UntypedServiceImplementation);
    const port = await new Promise<number>((resolve, reject) =>
      raw.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    return { address: `127.0.0.1:${port}`, seen, stop: () => raw.forceShutdown() };
  }

  /** 100 calls made in one turn by the mesh's client, after four calls opened its four streams. */
  async function callsInOneTurn(address: string) {
    const c = client(address);
    for (let i = 0; i < 4; i++)
      await c.call("Verify", { requestId: `warm${i}`, resource: resource(), credentials: [], client: "w" });
    return Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        c.call("Verify", { requestId: `o${i}`, resource: resource(), credentials: [], client: `q${i}` }),
      ),
    );
  }

  it("the mesh's client sends the calls it makes in one turn in a few messages to a server that reads batches", async () => {
    const server = await rawServer(true);
    try {
      const answers = await callsInOneTurn(server.address);
      expect(answers.map((a) => a.payer)).toEqual(answers.map((_, i) => `q${i}`));
      expect(server.seen.calls).toBe(104);
      // Four streams, the calls spread over them: two messages each (the first call, then the rest).
      expect(server.seen.messages).toBeLessThanOrEqual(4 + 4 * 2 + 4);
    } finally {
      server.stop();
    }
  });

  it("against a server that does not announce batches (an older replica), each call goes alone and is answered", async () => {
    const server = await rawServer(false);
    try {
      const answers = await callsInOneTurn(server.address);
      expect(answers.map((a) => a.payer)).toEqual(answers.map((_, i) => `q${i}`));
      expect(server.seen.calls).toBe(104);
      expect(server.seen.messages).toBe(104);
    } finally {
      server.stop();
    }
  });
});
