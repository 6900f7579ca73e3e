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
  /**
   * Reads that ride along with the next call (one JSON-RPC batch, one round trip), taken from the
   * caller's context when that call is sent: e.g. the payer's balance beside a payment's simulation.
   */
  companions?: () => Companion[] | undefined;
}

/** A read sent in the same request as another call; settled with its own result or error. */
export interface Companion {
  method: string;
  params: unknown[];
  resolve(result: unknown): void;
  reject(err: unknown): void;
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

  async function request(
    { method, params }: { method: string; params?: unknown },
    alone = false,
  ): Promise<unknown> {
    const body = { jsonrpc: "2.0", id: ++id, method, params: params ?? [] };
    const riding = alone ? undefined : opts.companions?.();
    const batch = riding?.map((c) => ({ jsonrpc: "2.0", id: ++id, method: c.method, params: c.params }));
    const fail = (err: unknown) => {
      for (const c of riding ?? []) c.reject(err);
      return err;
    };
    let status: number;
    let text: string;
    try {
      const res = await pool.request({
        path,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(batch ? [body, ...batch] : body),
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      if (err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError) {
        throw fail(new TimeoutError({ body, url }));
      }
      throw fail(new HttpRequestError({ body, url, details: (err as Error).message, cause: err as Error }));
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    let answer = parsed as RpcResponse | undefined;
    if (batch && !Array.isArray(parsed)) {
      // A node that takes no batches: the companions fail (their callers read without them), and
      // the call itself is sent again on its own.
      fail(new HttpRequestError({ body, url, status, details: "the node answered a batch with no list" }));
      return request({ method, params }, true);
    }
    if (batch && riding && Array.isArray(parsed)) {
      // A batch's answers come in any order: each call finds its own by id.
      const byId = new Map<unknown, RpcResponse>();
      for (const r of parsed as (RpcResponse & { id?: unknown })[])
        if (r && typeof r === "object") byId.set(r.id, r);
      answer = byId.get(body.id);
      for (const [i, c] of riding.entries()) {
        const own = byId.get(batch[i]?.id);
        if (!own) c.reject(new HttpRequestError({ body: batch[i], url, details: "no answer in the batch" }));
        else if (own.error) c.reject(new RpcRequestError({ body: batch[i] ?? {}, error: own.error, url }));
        else c.resolve(own.result);
      }
    }
    if (status < 200 || status >= 300 || !answer || typeof answer !== "object") {
      throw fail(
        new HttpRequestError({ body, url, status, details: text.slice(0, 200) || `HTTP ${status}` }),
      );
    }
    if (answer.error) throw new RpcRequestError({ body, error: answer.error, url });
    return answer.result;
  }

  return {
    // retryCount 0: a reverted simulation must come back at once as a refusal, not be retried.
    transport: custom({ request }, { retryCount: 0, name: "JSON-RPC (undici pool)", key: "jsonrpc" }),
    close: () => pool.close(),
  };
}
