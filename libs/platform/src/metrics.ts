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
 * The children of a labelled metric, found by their label values in the metric's label order
 * rather than by prom-client hashing a label object on every observation: what a per-call path
 * uses. Label values must stay a bounded set, as for any label.
 */
export function seriesOf<T extends string, C>(
  metric: { labels(...values: string[]): C },
  names: readonly T[],
): (labels: Record<T, string>) => C {
  const children = new Map<string, C>();
  return (labels) => {
    let key = "";
    for (const name of names) key += `${labels[name]}\u0000`;
    let child = children.get(key);
    if (child === undefined) {
      child = metric.labels(...names.map((n) => labels[n]));
      children.set(key, child);
    }
    return child;
  };
}

/**
 * `make(key)`, made once per key (a bounded set, e.g. a service's methods): what a per-call path
 * uses for the series it touches most, found by one Map lookup.
 */
export function once<C>(make: (key: string) => C): (key: string) => C {
  const made = new Map<string, C>();
  return (key) => {
    let value = made.get(key);
    if (value === undefined) {
      value = make(key);
      made.set(key, value);
    }
    return value;
  };
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
