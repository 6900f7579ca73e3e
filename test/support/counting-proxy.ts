import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One HTTP request an upstream node received: the JSON-RPC calls it carried. */
export interface UpstreamRequest {
  /** JSON-RPC methods, in order (several for a batch). */
  methods: string[];
  batch: boolean;
  body: unknown;
}

/**
 * A loopback HTTP proxy in front of a real node that records every request it forwards,
 * so a test can count the upstream round trips a gateway call costs.
 */
export class CountingProxy {
  readonly requests: UpstreamRequest[] = [];
  readonly #target: string;
  #server: Server | undefined;

  constructor(target: string) {
    this.#target = target;
  }

  get url(): string {
    if (!this.#server) throw new Error("the proxy is not listening");
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async listen(): Promise<this> {
    const server = createServer((req, res) => {
      this.#forward(req, res).catch((err: unknown) => {
        res.writeHead(502).end(String(err));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    this.#server = server;
    return this;
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const body: unknown = JSON.parse(text);
    const items = Array.isArray(body) ? body : [body];
    this.requests.push({
      methods: items.map((i) => String((i as { method?: unknown }).method)),
      batch: Array.isArray(body),
      body,
    });
    const upstream = await fetch(this.#target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
    });
    res.writeHead(upstream.status, { "content-type": "application/json" });
    res.end(await upstream.text());
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
