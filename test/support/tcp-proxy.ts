import { createServer, connect as netConnect, type Server, type Socket } from "node:net";

/**
 * A TCP proxy on 127.0.0.1 in front of a real server, so a test can cut or stall the
 * link (the server keeps running for everyone else). While cut it keeps its port (so no
 * other process can take it) and drops every connection at once: the server is
 * unreachable.
 */
export async function tcpProxy(targetPort: number) {
  const sockets = new Set<Socket>();
  let cut = false;
  let stalled = false;
  let repliesHeld = false;
  /** Hold a connection's replies from the request that carries these bytes on (holdRepliesTo). */
  let holdFrom: string | undefined;
  const held: Array<() => void> = [];
  /** Links gone silent for good (silence): their bytes are dropped both ways. */
  const silenced = new WeakSet<Socket>();
  /** New links go silent from their first byte (silenceNew) until restore. */
  let silentNew = false;
  /** Links accepted so far (a test waits for a client's new link after a reset). */
  let accepted = 0;

  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    accepted++;
    const upstream = netConnect(targetPort, "127.0.0.1");
    sockets.add(client);
    sockets.add(upstream);
    if (silentNew) {
      silenced.add(client);
      silenced.add(upstream);
    }
    let holdingThis = false;
    const forward = (from: Socket, to: Socket, reply: boolean) => {
      from.on("data", (chunk: Buffer) => {
        if (silenced.has(from)) return;
        if (!reply && holdFrom !== undefined && chunk.includes(holdFrom)) holdingThis = true;
        // Stalled: hold the bytes (a slow link, not a dead one) until it flows again.
        if (stalled || (reply && (repliesHeld || holdingThis))) held.push(() => to.write(chunk));
        else to.write(chunk);
      });
    };
    forward(client, upstream, false);
    forward(upstream, client, true);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on("close", close);
      s.on("error", close);
    }
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
  const dropAll = () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    held.length = 0;
  };

  return {
    port,
    url: (scheme: string) => `${scheme}://127.0.0.1:${port}`,
    /** Drops every connection and every new one: the server is unreachable. */
    async cut() {
      cut = true;
      stalled = false;
      dropAll();
    },
    /** Links accepted so far. */
    get accepted() {
      return accepted;
    },
    /** Chunks held back now (stalled, or replies held): a write has reached the proxy. */
    get held() {
      return held.length;
    },
    /** Drops every connection open now (both ends see it end); new ones flow. */
    reset() {
      dropAll();
    },
    /** Keeps connections open but holds all bytes: the server is slow, not gone. */
    stall() {
      stalled = true;
    },
    /**
     * Every link open now goes silent for good, without a reset (a partition, a dropped NAT entry):
     * its bytes are dropped both ways and neither end hears of it. New links flow.
     */
    silence() {
      for (const s of sockets) silenced.add(s);
      held.length = 0; // all held bytes were on these links: never delivered
    },
    /** Every new link is accepted and then silent for good (until restore, for links made after it). */
    silenceNew() {
      silentNew = true;
    },
    /** Lets requests through but holds the server's replies: a cut() then loses them. */
    holdReplies() {
      repliesHeld = true;
    },
    /** Like holdReplies, on each connection from the request whose bytes carry `marker` (e.g. "EXEC"). */
    holdRepliesTo(marker: string) {
      holdFrom = marker;
    },
    async restore() {
      cut = false;
      stalled = false;
      silentNew = false;
      repliesHeld = false;
      holdFrom = undefined;
      for (const flush of held.splice(0)) flush();
    },
    async close() {
      cut = true;
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
