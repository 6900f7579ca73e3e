// The x402 facilitator behind the resource server, in one of two modes:
//   remote: a facilitator service (standard /verify, /settle, /supported) via HTTPFacilitatorClient;
//   local:  x402Facilitator in-process with the exact EVM scheme and our own settlement key.
// Either way the resource server sees a FacilitatorClient. A facilitator or chain that cannot be
// reached surfaces as FacilitatorUnavailableError, never as an invalid payment.
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { Caip2, FacilitatorConfig } from "../config.ts";
import { createLocalFacilitator } from "./local.ts";
import type { Facilitator, FacilitatorDeps } from "./types.ts";

export function createFacilitator(
  cfg: FacilitatorConfig,
  network: Caip2,
  deps: FacilitatorDeps,
): Facilitator {
  if (cfg.mode === "remote") {
    return {
      mode: "remote",
      client: new HTTPFacilitatorClient({ url: cfg.url, timeoutMs: cfg.timeoutMs }),
      close: async () => {},
    };
  }
  return createLocalFacilitator(cfg, network, deps);
}
