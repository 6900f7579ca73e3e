import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import client from "prom-client";

export { client as prom };
export type Registry = client.Registry;

/** A registry per service with the default process metrics and a `service` label. */
export function createRegistry(service: string): client.Registry {
  const registry = new client.Registry();
  registry.setDefaultLabels({ service });
  client.collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * Serves `/metrics` on its own port, apart from any public listener, so scraping
 * never competes with (or leaks through) the public API.
 */
export async function serveMetrics(
  registry: client.Registry,
  port: number,
  host: string,
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    if (req.url === "/metrics") {
      res.setHeader("Content-Type", registry.contentType);
      res.end(await registry.metrics());
      return;
    }
    if (req.url === "/healthz") {
      res.end("ok");
      return;
    }
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
