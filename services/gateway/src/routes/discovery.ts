// GET /.well-known/x402: every paid resource with its x402 offers, in the shape of the x402
// specification's discovery list (v2 §8, `GET /discovery/resources`, as @x402/extensions' bazaar
// client types it: DiscoveryResourcesResponse): `{x402Version, items: [{resource, type: "http",
// x402Version, accepts, lastUpdated, description, mimeType, serviceName, tags, extensions: {bazaar},
// metadata}], pagination}`. Each item is read from the 402 payment-verifier makes for the resource
// (its catalog example), so `accepts` and `bazaar` are exactly what a call's 402 offers.
//
// The list is built at most once a minute, one Challenge per resource in parallel, never per
// request: concurrent readers share one build, and while a rebuild runs or fails the last list is
// served. When the accepted methods change, the next read waits for a new list (the last one if
// that fails).
import { randomUUID } from "node:crypto";
import { type Endpoint, PAID_RESOURCES, PAYMENT_HEADERS } from "@tollgate/catalog";
import type { Logger } from "@tollgate/platform";
import type { PaymentVerifierClient } from "../clients/payment-verifier.ts";
import type { AcceptedMethods } from "../payment-methods.ts";

/** After a failed build, how long reads wait before another is tried. */
const RETRY_MS = 1_000;

export interface DiscoveryDeps {
  payments: Pick<PaymentVerifierClient, "challenge">;
  methods: AcceptedMethods;
  logger: Logger;
  publicBaseUrl: string | undefined;
  /** How long a built list is served before the next read rebuilds it. */
  ttlMs?: number;
}

interface PaymentRequired {
  x402Version: number;
  resource: { url: string; description?: string; mimeType?: string; serviceName?: string; tags?: string[] };
  accepts: unknown[];
  extensions?: Record<string, unknown>;
}

/** The URL a resource is asked for: its catalog example (path values, query). */
function exampleUrl(endpoint: Endpoint, base: string): string {
  let path = endpoint.path;
  for (const [k, v] of Object.entries(endpoint.example.path ?? {})) path = path.replace(`{${k}}`, v);
  const query = new URLSearchParams(endpoint.example.query ?? {}).toString();
  return `${base}${path}${query && !path.includes("?") ? `?${query}` : ""}`;
}

/** The discovery list's reader: `json()` is the document, built when stale. */
export function discoveryList(deps: DiscoveryDeps) {
  const ttlMs = deps.ttlMs ?? 60_000;
  const base = deps.publicBaseUrl ?? "";
  let built: { json: string; at: number } | undefined;
  let building: Promise<void> | undefined;
  /** The accepted methods changed since the last build: the next read waits for a new list. */
  let changed = false;
  /** When the last build failed: none is tried again within RETRY_MS of it. */
  let failedAt = Number.NEGATIVE_INFINITY;

  const item = async (endpoint: Endpoint, lastUpdated: string) => {
    const resource = {
      endpoint: endpoint.path,
      network: endpoint.networks[0] ?? "",
      url: exampleUrl(endpoint, base),
    };
    const { headers } = await deps.payments.challenge(`discovery-${randomUUID()}`, resource);
    const header = headers.find((h) => h.name.toLowerCase() === PAYMENT_HEADERS.required.name.toLowerCase());
    if (!header) return undefined;
    const required = JSON.parse(Buffer.from(header.value, "base64").toString("utf8")) as PaymentRequired;
    const { url: _, ...described } = required.resource;
    return {
      // The resource's catalog name: a templated path in the `:param` form bazaar's routeTemplate uses.
      resource: `${base}${endpoint.path.replace(/\{(\w+)\}/g, ":$1")}`,
      type: "http",
      x402Version: required.x402Version,
      accepts: required.accepts,
      lastUpdated,
      ...described,
      extensions: { bazaar: required.extensions?.bazaar },
      metadata: { method: endpoint.method, price_usd: endpoint.price, networks: endpoint.networks },
    };
  };

  const build = async () => {
    changed = false;
    const lastUpdated = new Date().toISOString();
    const items = (await Promise.all(PAID_RESOURCES.map((e) => item(e, lastUpdated)))).filter(
      (i) => i !== undefined,
    );
    const document = {
      x402Version: 2,
      items,
      pagination: { limit: items.length, offset: 0, total: items.length },
    };
    built = { json: JSON.stringify(document), at: Date.now() };
  };

  const rebuild = (): Promise<void> => {
    building ??= build()
      .catch((err: unknown) => {
        failedAt = Date.now();
        deps.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          "x402 discovery list not rebuilt: payment offers unavailable; serving the last one",
        );
      })
      .finally(() => {
        building = undefined;
      });
    return building;
  };
  deps.methods.onChange(() => {
    changed = true;
  });

  return {
    /** The document (the last one built, if a rebuild fails), or undefined before any was built. */
    async json(): Promise<string | undefined> {
      const now = Date.now();
      /** No list yet, or one of other methods: this read waits for a build. */
      const mustWait = !built || changed;
      // Within RETRY_MS of a failed build, the last list (or none) without a new attempt.
      const mayTry = now - failedAt >= RETRY_MS;
      if (building) {
        if (mustWait) await building;
      } else if (mayTry && mustWait) await rebuild();
      else if (mayTry && built && now - built.at >= ttlMs) void rebuild();
      return built?.json;
    },
  };
}
