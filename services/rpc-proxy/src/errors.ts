import { grpc, ServiceError } from "@tollgate/platform";
import { decodeErrorResult, type Hex, isHex } from "viem";
import type { RpcError, TransportError } from "./upstream/jsonrpc.ts";

// Solidity's built-in panic codes (docs.soliditylang.org, "Panic via assert and Error via require").
const PANIC_REASONS: Record<number, string> = {
  0: "generic compiler panic",
  1: "assertion failed",
  17: "arithmetic underflow or overflow",
  18: "division or modulo by zero",
  33: "invalid enum value",
  34: "invalid storage byte array encoding",
  49: "pop on an empty array",
  50: "array index out of bounds",
  65: "out of memory",
  81: "call to an uninitialized internal function",
};

/** The revert payload a node attached to an error: a hex string, or nested one level down. */
function revertData(data: unknown): Hex {
  if (typeof data === "string" && isHex(data) && data.length % 2 === 0) return data;
  if (data && typeof data === "object" && "data" in data) return revertData((data as { data: unknown }).data);
  return "0x";
}

/** Human reason for Error(string) and Panic(uint256) payloads; undefined for custom errors. */
export function decodeRevertReason(data: Hex): string | undefined {
  if (data.length < 10) return undefined;
  try {
    const decoded = decodeErrorResult({ abi: [], data });
    if (decoded.errorName === "Error") return String(decoded.args?.[0] ?? "");
    if (decoded.errorName === "Panic") {
      const code = Number(decoded.args?.[0] ?? 0);
      return `panic 0x${code.toString(16).padStart(2, "0")}: ${PANIC_REASONS[code] ?? "unknown panic code"}`;
    }
  } catch {
    // A custom error or garbage: the raw revert_data still tells the caller everything.
  }
  return undefined;
}

/** execution_reverted from a revert payload, with the decoded reason when there is one. */
export function revertError(data: Hex, fallbackReason?: string): ServiceError {
  const reason = decodeRevertReason(data) ?? fallbackReason;
  return new ServiceError(
    grpc.status.FAILED_PRECONDITION,
    "execution_reverted",
    reason ? `execution reverted: ${reason}` : "execution reverted",
    reason === undefined ? { revert_data: data } : { revert_data: data, reason },
  );
}

const REVERTED = /revert/i;
// Calls and estimates that fail for reasons of the transaction itself, not of the node:
// funds and gas, and the EVM's exceptional halts (anvil/revm say "EVM error <Kind>").
const TX_WOULD_FAIL =
  /insufficient funds|gas required exceeds|out of gas|intrinsic gas too low|EVM error|invalid opcode|opcode 0x[0-9a-f]+ not defined|stack (underflow|overflow|limit reached)|invalid jump|max code size exceeded|write protection|return data out of bounds/i;
const BLOCK_NOT_FOUND =
  /header not found|block not found|unknown block|blockoutofrange|block .*could not be found|(requested|block) .*(greater|higher|beyond|after) .*(head|latest|current|height)|block height is \d+ but requested/i;
const LOGS_TOO_LARGE =
  /more than \d+ (results|logs)|response size|too many (results|logs)|result set too large|query (returned|exceeds)|block range (is )?(too (large|wide|big))|exceed(s|ed)? .*(range|results|limit)|limit exceeded|log response size|range too large/i;

function upstreamError(err: RpcError): ServiceError {
  const message = err.message.length > 200 ? `${err.message.slice(0, 200)}…` : err.message;
  return new ServiceError(
    grpc.status.UNKNOWN,
    "upstream_error",
    `the node answered with an error: ${message}`,
    {
      rpc_code: err.code,
    },
  );
}

/**
 * Turns a JSON-RPC error the node answered with into the catalog's error for the
 * method that got it. Messages differ across clients (geth, erigon, nethermind, reth,
 * anvil, hosted providers), hence the loose patterns.
 */
export function mapRpcError(err: RpcError, method: string): ServiceError {
  if (method === "eth_call" || method === "eth_estimateGas") {
    if (err.code === 3 || REVERTED.test(err.message)) {
      const data = revertData(err.data);
      const stated = /revert(?:ed)?:\s*(.+)$/i.exec(err.message)?.[1];
      return revertError(data, data === "0x" ? stated : undefined);
    }
    if (TX_WOULD_FAIL.test(err.message)) {
      return new ServiceError(
        grpc.status.FAILED_PRECONDITION,
        "execution_reverted",
        `execution reverted: ${err.message}`,
        { revert_data: "0x", reason: err.message },
      );
    }
  }
  if (BLOCK_NOT_FOUND.test(err.message)) {
    return new ServiceError(grpc.status.NOT_FOUND, "block_not_found", "the node does not know that block");
  }
  if (method === "eth_getLogs" && (LOGS_TOO_LARGE.test(err.message) || err.code === -32005)) {
    return new ServiceError(
      grpc.status.FAILED_PRECONDITION,
      "result_too_large",
      "the node refused the log query as too large; narrow the block range or add filters",
    );
  }
  return upstreamError(err);
}

export function invalidParameter(name: string, message: string): ServiceError {
  return new ServiceError(grpc.status.INVALID_ARGUMENT, "invalid_parameter", `${name}: ${message}`, {
    parameter: name,
  });
}

/** The node answered with something that does not fit the method's result. */
export function malformedAnswer(what: string): ServiceError {
  return new ServiceError(grpc.status.UNKNOWN, "upstream_error", `the node sent a malformed ${what}`);
}

/** How a read that got no answer fails: slow reads as a timeout, an unreadable (or lying) answer as
 * upstream_error, the rest as unavailable (none of them charged). */
export function failure(network: string, last: TransportError | undefined, timedOut: boolean): ServiceError {
  if (timedOut) {
    return new ServiceError(
      grpc.status.DEADLINE_EXCEEDED,
      "upstream_timeout",
      `the ${network} node did not answer in time`,
    );
  }
  if (last?.kind === "bad_response") {
    return new ServiceError(
      grpc.status.UNKNOWN,
      "upstream_error",
      `the ${network} node sent an unreadable answer`,
    );
  }
  return new ServiceError(
    grpc.status.UNAVAILABLE,
    "upstream_unavailable",
    `no healthy ${network} node is reachable right now`,
  );
}
