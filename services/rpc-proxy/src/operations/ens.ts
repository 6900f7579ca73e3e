import { grpc, ServiceError } from "@tollgate/platform";
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createClient,
  custom,
  RpcRequestError,
} from "viem";
import { getEnsAddress, getEnsName, normalize } from "viem/ens";
import { invalidParameter } from "../errors.ts";
import { RpcError } from "../upstream/jsonrpc.ts";
import type { Operation, OperationContext } from "./shared.ts";

/**
 * A viem client whose transport is this operation's upstream pool, so viem's ENS
 * actions (Universal Resolver encoding and decoding) cost exactly one pooled eth_call.
 * Offchain (CCIP-read) resolution is off: it would need further round trips.
 */
function ensClient(ctx: OperationContext) {
  return createClient({
    ccipRead: false,
    transport: custom(
      {
        async request({ method, params }: { method: string; params?: unknown }) {
          try {
            return await ctx.pool.call({ method, params: (params as unknown[]) ?? [] }, ctx.call);
          } catch (err) {
            if (!(err instanceof RpcError)) throw err;
            // The same error viem's http transport raises, so its revert decoding applies.
            throw new RpcRequestError({
              body: { method },
              error: { code: err.code, message: err.message, data: err.data } as never,
              url: ctx.network,
            });
          }
        },
      },
      { retryCount: 0 },
    ),
  });
}

function notFound(message: string): ServiceError {
  return new ServiceError(grpc.status.NOT_FOUND, "ens_name_not_found", message);
}

/** Our own failures (timeouts, no upstream) travel through viem as causes: unwrap them. */
function translate(err: unknown, input: string): unknown {
  for (let e = err as { cause?: unknown } | undefined, i = 0; e && i < 10; e = e.cause as typeof e, i++) {
    if (e instanceof ServiceError) return e;
  }
  if (err instanceof BaseError && err.walk((e) => e instanceof ContractFunctionRevertedError)) {
    return notFound(`${input} could not be resolved`);
  }
  return new ServiceError(grpc.status.UNKNOWN, "upstream_error", "the ENS Universal Resolver call failed");
}

export const ens: Operation = async (params, ctx) => {
  const { input } = params as { input: string };
  const client = ensClient(ctx);
  const universalResolverAddress = ctx.config.ensUniversalResolver;
  if (/^0x[0-9a-f]{40}$/.test(input)) {
    // The catalog hands addresses over lower-case, which viem accepts without a checksum.
    const address = input as Address;
    let name: string | null;
    try {
      name = await getEnsName(client, { address, universalResolverAddress });
    } catch (err) {
      throw translate(err, input);
    }
    if (!name) throw notFound(`${input} has no primary ENS name`);
    return { address, input, mode: "reverse", name };
  }
  let normalized: string;
  try {
    normalized = normalize(input);
  } catch {
    throw invalidParameter("input", "not a valid ENS name");
  }
  let address: Address | null;
  try {
    address = await getEnsAddress(client, { name: normalized, universalResolverAddress });
  } catch (err) {
    throw translate(err, input);
  }
  if (!address) throw notFound(`${input} has no address`);
  return { address: address.toLowerCase(), input, mode: "forward" };
};
