/** JSON-RPC 2.0 framing: one call or a batch in one HTTP body, answers matched by id. */

export interface RpcCall {
  method: string;
  params: unknown[];
}

/** The node answered this call with a JSON-RPC error: the node is up, the call failed. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = data;
  }
}

// Providers that throttle often answer HTTP 200 with a JSON-RPC error rather than a 429.
const RATE_LIMITED = /rate.?limit|too many requests|request limit|compute units|capacity exceeded/i;

/** A JSON-RPC error that says "this node is throttling you", not "your call failed". */
export function isRateLimit(err: RpcError): boolean {
  return err.code === 429 || RATE_LIMITED.test(err.message);
}

export type RpcOutcome = { ok: true; result: unknown } | { ok: false; error: RpcError };

/**
 * Why an HTTP attempt got no usable answer. `sent` says whether the request left this
 * process (a refused connection or an open breaker costs no upstream round trip).
 */
export type TransportFailureKind =
  | "timeout"
  | "connect_error"
  | "network_error"
  | "http_error"
  | "bad_response"
  | "rate_limited"
  | "breaker_open"
  // A hedged read's other attempt answered first: not the node's failure.
  | "cancelled";

export class TransportError extends Error {
  readonly kind: TransportFailureKind;
  readonly sent: boolean;
  readonly status: number | undefined;
  constructor(kind: TransportFailureKind, message: string, opts: { sent: boolean; status?: number }) {
    super(message);
    this.name = "TransportError";
    this.kind = kind;
    this.sent = opts.sent;
    this.status = opts.status;
  }
}

/** A single call goes as an object, several as a batch array with ids 0..n-1. */
export function encodeRequest(calls: readonly RpcCall[]): string {
  if (calls.length === 1) {
    const [call] = calls as [RpcCall];
    return JSON.stringify({ jsonrpc: "2.0", id: 0, method: call.method, params: call.params });
  }
  return JSON.stringify(calls.map((c, id) => ({ jsonrpc: "2.0", id, method: c.method, params: c.params })));
}

interface ResponseObject {
  id?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown };
}

function toOutcome(obj: ResponseObject): RpcOutcome {
  if (obj.error && typeof obj.error === "object") {
    const code = typeof obj.error.code === "number" ? obj.error.code : -32603;
    const message = typeof obj.error.message === "string" ? obj.error.message : "unknown error";
    return { ok: false, error: new RpcError(code, message, obj.error.data) };
  }
  if (!("result" in obj))
    throw new TransportError("bad_response", "response has neither result nor error", { sent: true });
  return { ok: true, result: obj.result };
}

/** Parses the body and returns one outcome per call, in call order. */
export function decodeResponse(text: string, count: number): RpcOutcome[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new TransportError("bad_response", "response is not JSON", { sent: true });
  }
  if (Array.isArray(body)) {
    const byId = new Map<unknown, ResponseObject>();
    for (const item of body)
      if (item && typeof item === "object") byId.set((item as ResponseObject).id, item);
    const outcomes: RpcOutcome[] = [];
    for (let id = 0; id < count; id++) {
      const item = byId.get(id);
      if (!item) throw new TransportError("bad_response", `batch response lacks id ${id}`, { sent: true });
      outcomes.push(toOutcome(item));
    }
    return outcomes;
  }
  if (!body || typeof body !== "object") {
    throw new TransportError("bad_response", "response is not a JSON-RPC object", { sent: true });
  }
  const outcome = toOutcome(body as ResponseObject);
  // A node that refuses a whole batch answers with one error object: it applies to every call.
  if (count > 1 && outcome.ok)
    throw new TransportError("bad_response", "batch answered with one result", { sent: true });
  return Array.from({ length: count }, () => outcome);
}
