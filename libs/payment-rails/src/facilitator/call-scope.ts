// One facilitator verify or settle as a scope (AsyncLocalStorage): the node's transport failures
// noted in it, so an outage is told from a bad payment, and reads that ride along with its next call.
import { AsyncLocalStorage } from "node:async_hooks";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { Address, Hex } from "viem";
import { FacilitatorUnavailableError } from "../errors.ts";
import type { Companion } from "../json-rpc-transport.ts";

/** balanceOf(address) */
const BALANCE_OF = "0x70a08231";

/**
 * Whose balance a payment's settlement draws on with a transaction of ours: an `exact` EIP-3009
 * transfer's `from`, an x402-batch deposit's payer; undefined for anything that sends nothing of
 * the payer's (a voucher).
 */
export function drawingPayer(
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): Address | undefined {
  const inner = payload.payload as {
    authorization?: { from?: unknown };
    type?: unknown;
    channelConfig?: { payer?: unknown };
  };
  const payer =
    requirements.scheme === "exact"
      ? inner.authorization?.from
      : inner.type === "deposit"
        ? inner.channelConfig?.payer
        : undefined;
  return typeof payer === "string" && /^0x[0-9a-fA-F]{40}$/.test(payer) ? (payer as Address) : undefined;
}

/**
 * The payer's token balance, read as a companion of the scope's next call (one round trip for
 * both); undefined when there is no payer, or the read failed (the balance is then unknown).
 */
export function balanceRead(
  scope: CallScope,
  payer: Address | undefined,
  asset: string,
): Promise<bigint | undefined> {
  if (!payer) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    scope.companions.push({
      method: "eth_call",
      params: [
        { to: asset, data: `${BALANCE_OF}${payer.slice(2).toLowerCase().padStart(64, "0")}` },
        "latest",
      ],
      resolve: (result) => {
        try {
          resolve(typeof result === "string" && result.length > 2 ? BigInt(result.slice(0, 66)) : undefined);
        } catch {
          resolve(undefined);
        }
      },
      reject: () => resolve(undefined),
    });
  });
}

/** viem errors that mean "could not talk to the node", as opposed to the node answering. */
const TRANSPORT_ERRORS = new Set([
  "HttpRequestError",
  "TimeoutError",
  "WebSocketRequestError",
  "SocketClosedError",
]);

export function isTransportError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 8; depth++) {
    const { name, cause } = e as { name?: string; cause?: unknown };
    if (name && TRANSPORT_ERRORS.has(name)) return true;
    e = cause;
  }
  return false;
}

/**
 * Notes RPC transport failures during one verify/settle. The exact scheme turns some of them into
 * ordinary refusals (a failed getCode reads as "invalid signature", a failed simulation as
 * "simulation failed"); with this we can tell an outage from a bad payment.
 */
const rpcFailures = new AsyncLocalStorage<CallScope>();

/**
 * Runs one verify or settle in its own scope: a transport failure, or a refusal the library made
 * while the node was unreachable (`refusedByOutage`), is a FacilitatorUnavailableError (503, retry),
 * never a payment refused for a reason it does not have.
 */
export async function outageAware<R>(
  step: "verify" | "settle",
  scheme: string,
  run: (scope: CallScope) => Promise<R>,
  refusedByOutage: (result: R) => boolean,
): Promise<R> {
  const scope = newScope(scheme);
  const unavailable = () => new FacilitatorUnavailableError(`settlement chain unreachable during ${step}`);
  const result = await rpcFailures
    .run(scope, () => run(scope))
    .catch((err) => {
      throw scope.failed || isTransportError(err) ? unavailable() : err;
    });
  if (scope.failed && refusedByOutage(result)) throw unavailable();
  return result;
}

/** One facilitator verify or settle: whether the node was unreachable, and reads made so far. */
interface CallScope {
  /** The x402 scheme of the payment (exact, batch-settlement): what its reverts are counted under. */
  scheme: string;
  failed: boolean;
  /** Reads to send with the scope's next call, in the same round trip (see jsonRpcTransport). */
  companions: Companion[];
  /** The exact scheme reads the payer's code twice per verify; once is enough. */
  code: Map<string, Promise<Hex | undefined>>;
  /** Contract reads started ahead of the library (readAhead), by call (see readKey). */
  reads: Map<string, Promise<unknown>>;
}

const newScope = (scheme: string): CallScope => ({
  scheme,
  failed: false,
  companions: [],
  code: new Map(),
  reads: new Map(),
});

/** The reads waiting to ride with the current scope's next call (taken once). */
export function takeCompanions(): Companion[] | undefined {
  const scope = rpcFailures.getStore();
  if (!scope || scope.companions.length === 0) return undefined;
  const taken = scope.companions;
  scope.companions = [];
  return taken;
}

/** A contract read's identity: the contract, the function and its arguments. */
export function readKey(address: string, functionName: string, args: readonly unknown[] | undefined): string {
  return `${address}|${functionName}|${(args ?? []).map(String).join("|")}`.toLowerCase();
}

export async function tracked<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isTransportError(err)) {
      const scope = rpcFailures.getStore();
      if (scope) scope.failed = true;
    }
    throw err;
  }
}

export function swallowTransportError(err: unknown): undefined {
  if (isTransportError(err)) return undefined;
  throw err;
}

/** The scope of the verify or settle running now, if any. */
export const currentScope = (): CallScope | undefined => rpcFailures.getStore();

export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
