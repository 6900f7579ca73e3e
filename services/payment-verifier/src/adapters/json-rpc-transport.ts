// The viem transport for the settlement chain: JSON-RPC over one keep-alive undici pool.
// viem's http transport goes through fetch and builds a Request, an AbortController, a timer and a
// TimeoutError for every call; a paid call makes about six of them on the settle path. Here a call
// is one pooled request whose timeouts ride undici's shared timer wheel, and errors are built only
// when something fails, as the same viem error classes the http transport throws (so code that
// tells an outage from a refusal, and viem's own error parsing, see no difference).
import { errors, Pool } from "undici";
import { custom, HttpRequestError, RpcRequestError, TimeoutError, type Transport } from "viem";

export interface JsonRpcTransportOptions {
  /** Headers and body must arrive within this (ms). */
  timeoutMs: number;
  /** Connections kept to the node. */
  connections?: number;
}

export interface JsonRpcTransport {
  readonly transport: Transport;
  close(): Promise<void>;
}

interface RpcResponse {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export function jsonRpcTransport(url: string, opts: JsonRpcTransportOptions): JsonRpcTransport {
  const target = new URL(url);
  const path = `${target.pathname}${target.search}`;
  const pool = new Pool(target.origin, {
    connections: opts.connections ?? 8,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    keepAliveTimeout: 30_000,
  });
  let id = 0;

  async function request({ method, params }: { method: string; params?: unknown }): Promise<unknown> {
    const body = { jsonrpc: "2.0", id: ++id, method, params: params ?? [] };
    let status: number;
    let text: string;
    try {
      const res = await pool.request({
        path,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      if (err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError) {
        throw new TimeoutError({ body, url });
      }
      throw new HttpRequestError({ body, url, details: (err as Error).message, cause: err as Error });
    }
    let parsed: RpcResponse | undefined;
    try {
      parsed = JSON.parse(text) as RpcResponse;
    } catch {
      parsed = undefined;
    }
    if (status < 200 || status >= 300 || !parsed || typeof parsed !== "object") {
      throw new HttpRequestError({ body, url, status, details: text.slice(0, 200) || `HTTP ${status}` });
    }
    if (parsed.error) throw new RpcRequestError({ body, error: parsed.error, url });
    return parsed.result;
  }

  return {
    // retryCount 0: a reverted simulation must come back at once as a refusal, not be retried.
    transport: custom({ request }, { retryCount: 0, name: "JSON-RPC (undici pool)", key: "jsonrpc" }),
    close: () => pool.close(),
  };
}
