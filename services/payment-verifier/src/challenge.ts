// The 402 offer for a paid call: the catalog decides the price (one description per endpoint),
// every scheme adds its challenge headers (x402 PAYMENT-REQUIRED now; MPP WWW-Authenticate later).
import { ENDPOINTS, type Endpoint } from "@tollgate/catalog";
import { grpc, ServiceError } from "@tollgate/platform";
import type { Header, PaymentScheme, PricedCall } from "./schemes/scheme.ts";

const byPath = new Map<string, Endpoint>(ENDPOINTS.map((e) => [e.path, e]));

export interface ResourceInput {
  endpoint?: string;
  network?: string;
  url?: string;
}

/** Resolves the gRPC Resource to a priced call; an unknown endpoint is the caller's bug. */
export function pricedCall(requestId: string, resource: ResourceInput | null | undefined): PricedCall {
  const path = resource?.endpoint ?? "";
  if (!path)
    throw new ServiceError(
      grpc.status.INVALID_ARGUMENT,
      "invalid_parameter",
      "resource.endpoint is required",
    );
  const endpoint = byPath.get(path);
  if (!endpoint) {
    throw new ServiceError(
      grpc.status.NOT_FOUND,
      "not_found",
      `no paid endpoint with path template "${path}"`,
    );
  }
  return { requestId, endpoint, network: resource?.network ?? "", url: resource?.url ?? "" };
}

/** Every scheme's challenge headers, in scheme order. */
export async function challengeHeaders(
  schemes: readonly PaymentScheme[],
  call: PricedCall,
  error: string,
): Promise<Header[]> {
  const all = await Promise.all(schemes.map((s) => s.challenge(call, error)));
  return all.flat();
}
