import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorded {
  /** JSON-RPC methods in the HTTP request (several for a batch). */
  methods: string[];
  /** Whether the HTTP request carried a JSON-RPC batch. */
  batch: boolean;
  body: unknown;
  path: string;
}

/**
 * An HTTP server in front of a real node that records every request it forwards, so a
 * test can count upstream round trips. `mode = "hang"` accepts requests and never
 * answers (a hung node), `mode = "throttle"` answers like a rate-limiting provider, `mode = "hold"`
 * keeps each request until `release()` (calls a test wants in flight), `mode = "swallow"` forwards each
 * request to the node and withholds the answer (a node that times out after accepting); `close()` makes its port refuse
 * connections, `reopen()` brings it back on the same port.
 */
export class CountingProxy {
  readonly requests: Recorded[] = [];
  mode: "forward" | "hang" | "throttle" | "hold" | "swallow" = "forward";
  /** In "hold" mode, only requests carrying one of these JSON-RPC methods are held (all when unset). */
  holdOnly: readonly string[] | undefined;
  /**
   * A JSON-RPC error (HTTP 200) to answer a single call with instead of forwarding it, as a provider
   * refusing one call does; undefined forwards it.
   */
  refuse:
    | ((call: { method: string; params: unknown[] }) => { code: number; message: string } | undefined)
    | undefined;
  /**
   * Rewrites the node's answer to a single call before it is sent back (a node that lies); returns
   * the result to answer instead, or undefined to leave it as the node gave it.
   */
  alter: ((call: { method: string; params: unknown[] }, result: unknown) => unknown) | undefined;
  /** Answers `alter` changed. */
  altered = 0;
  /** Every `slowEvery`-th request forwarded (0: none) is held `slowMs` first: a node slow now and then. */
  slowEvery = 0;
  slowMs = 300;
  /** Requests held so (slowEvery). */
  slowed = 0;
  /** Requests whose client went away before the answer was written (a cancelled hedge's loser). */
  abandoned = 0;
  port = 0;
  readonly #target: string;
  #forwarded = 0;
  #server: Server | undefined;
  #held: Array<() => void> = [];

  constructor(target: string) {
    this.#target = target;
  }

  /** URL with a path that stands in for an API key, which must never leak. */
  url(path = "/v3/SECRET-KEY-abc123"): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async listen(port = 0): Promise<this> {
    const server = createServer((req, res) => void this.#handle(req, res));
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.#server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const items = Array.isArray(body) ? body : [body];
    const methods = items.map((i) => String((i as { method?: unknown })?.method));
    this.requests.push({
      methods,
      batch: Array.isArray(body),
      body,
      path: req.url ?? "",
    });
    if (this.mode === "hang") return; // never answer; the socket stays open
    if (this.mode === "hold" && (!this.holdOnly || methods.some((m) => this.holdOnly?.includes(m))))
      await new Promise<void>((resolve) => this.#held.push(resolve));
    if (this.mode === "throttle") {
      // What hosted providers send when throttling: HTTP 200 and a JSON-RPC error per call.
      const error = { code: -32005, message: "rate limit exceeded, too many requests" };
      const answers = items.map((i) => ({ jsonrpc: "2.0", id: (i as { id?: unknown })?.id ?? null, error }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
      return;
    }
    const single = body as { id?: unknown; method?: string; params?: unknown[] };
    const refused =
      !Array.isArray(body) && this.refuse?.({ method: String(single?.method), params: single?.params ?? [] });
    if (refused) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: single.id ?? null, error: refused }));
      return;
    }
    const swallow = this.mode === "swallow";
    if (this.slowEvery > 0 && ++this.#forwarded % this.slowEvery === 0) {
      this.slowed++;
      res.once("close", () => {
        if (!res.writableFinished) this.abandoned++;
      });
      // time-based: a slow upstream answers after slowMs (the case under test).
      await new Promise((resolve) => setTimeout(resolve, this.slowMs));
      if (res.destroyed) return;
    }
    const upstream = await fetch(this.#target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
    });
    let answer = await upstream.text();
    if (swallow) return; // the node took it; its answer never comes back
    if (this.alter && !Array.isArray(body)) {
      const parsed = JSON.parse(answer) as { result?: unknown };
      const lie =
        "result" in parsed
          ? this.alter({ method: String(single?.method), params: single?.params ?? [] }, parsed.result)
          : undefined;
      if (lie !== undefined) {
        this.altered++;
        answer = JSON.stringify({ ...parsed, result: lie });
      }
    }
    res.writeHead(upstream.status, { "content-type": "application/json" });
    res.end(answer);
  }

  /** Forwards every held request and what comes next. */
  release(): void {
    this.mode = "forward";
    for (const resolve of this.#held.splice(0)) resolve();
  }

  /** Requests recorded after `mark`, without the background head polls. */
  since(mark: number): Recorded[] {
    return this.requests.slice(mark);
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again on the same port after close(). */
  async reopen(): Promise<void> {
    await this.listen(this.port);
  }
}
