import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  ERRORS,
  type ErrorCode,
  LIMIT_ERRORS,
  type LimitErrorCode,
  REQUEST_ID_HEADER,
  RPC_ERRORS,
} from "@tollgate/catalog";
import type { NextFunction, Request, Response } from "express";
import { pathOf } from "./edge.ts";
import { endpointOf } from "./routes/table.ts";

/**
 * What the envelope and the auth methods need of a response: Node's own, plus the request's
 * locals. Express's Response is one; so is the fast lane's plain node:http response
 * (routes/fast-lane.ts), which is why nothing here calls Express's helpers.
 */
export type Reply = ServerResponse & { locals: Express.Locals };

/** The envelope of spec 2.1, on every /api/* response except the flat 429s. */
export interface Meta {
  endpoint: string;
  request_id: string;
  cost_usdc?: string;
  payment_chain?: string;
  payment_token?: string;
}

interface ErrorBody {
  code: string;
  message: string;
  [extra: string]: unknown;
}

declare global {
  namespace Express {
    interface Locals {
      /** The mesh's id of this request (never the caller's): meta.request_id and every idempotency key. */
      requestId: string;
      /** A well-formed X-Request-Id the caller sent: written to the access log, used for nothing else. */
      clientRequestId?: string;
      /** Path template served, for meta.endpoint and metrics labels; unset on unknown paths. */
      endpoint?: string;
      /**
       * How the call was authenticated, for the access log and the `auth` metrics label:
       * "api_key", "invalid", "payment" (not verified), then the verified scheme ("exact", ...).
       */
      auth?: string;
      /** The key's account or the payer, for the access log (never the key itself). */
      principal?: string;
      /**
       * A JSON-RPC request (POST /rpc/{network}): answers are JSON-RPC, not the envelope. `ids` are
       * the request's (one per call, in order); `answer` writes the node's answers in among the
       * calls answered here.
       */
      jsonRpc?: JsonRpcReply;
    }
  }
}

/** How a JSON-RPC request is answered (routes/rpc.ts makes it). */
export interface JsonRpcReply {
  batch: boolean;
  ids: Array<string | number | null>;
  /** The answer body from rpc-proxy's answers (one per relayed call). */
  answer(dataJson: string): string;
}

/** A JSON-RPC refusal's code for the API's error code: JSON-RPC's own where one fits. */
const RPC_CODES: Partial<Record<ErrorCode, number>> = {
  invalid_body: RPC_ERRORS.parse,
  invalid_parameter: RPC_ERRORS.invalidParams,
  unknown_parameter: RPC_ERRORS.invalidParams,
  payload_too_large: RPC_ERRORS.invalidRequest,
  unsupported_media_type: RPC_ERRORS.invalidRequest,
  method_not_allowed: RPC_ERRORS.invalidRequest,
};

/** A refusal of a whole JSON-RPC request, its HTTP status kept: one error per call it carried. */
function rpcErrorBody(
  rpc: Pick<JsonRpcReply, "batch" | "ids">,
  code: string,
  message: string,
  data: object,
): string {
  // A body refused whole (not a request, an empty or oversized batch) is JSON-RPC's invalid request.
  const body = code === "invalid_parameter" && (data as { parameter?: string }).parameter === "body";
  const rpcCode = body ? RPC_ERRORS.invalidRequest : (RPC_CODES[code as ErrorCode] ?? RPC_ERRORS.refused);
  const error = { code: rpcCode, message, data: { code, ...data } };
  const one = (id: string | number | null) => ({ jsonrpc: "2.0", id, error });
  return JSON.stringify(rpc.batch ? rpc.ids.map(one) : one(rpc.ids[0] ?? null));
}

/** A JSON-RPC path's answers before its route read the body: no ids known. */
const NO_IDS = { batch: false, ids: [null] };

/** How the response is answered when it is JSON-RPC: the route's reply, or a /rpc/ path's default. */
function jsonRpcOf(res: Reply): Pick<JsonRpcReply, "batch" | "ids"> | undefined {
  return res.locals.jsonRpc ?? (pathOf(res.req.url ?? "/").startsWith("/rpc/") ? NO_IDS : undefined);
}

/** The request id header as Node keys incoming headers (lower case). */
const REQUEST_ID_KEY = REQUEST_ID_HEADER.toLowerCase();

// A caller's id is logged for correlation only when it is safe to echo into logs.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * Every request gets an id generated here, unique per request: `meta.request_id`, the
 * `X-Request-Id` response header, and the key of everything that happens once for it inside the
 * mesh (usage, refunds, payments, events). A client's own `X-Request-Id` is only written to the
 * access log (`client_request_id`), never used as a key: clients retry with the same id.
 */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  assignRequestId(req, res);
  next();
}

/** The request's id (see requestId), for either lane. */
export function assignRequestId(req: IncomingMessage, res: Reply): void {
  const id = randomUUID();
  const incoming = req.headers[REQUEST_ID_KEY];
  if (typeof incoming === "string" && CLIENT_REQUEST_ID.test(incoming)) res.locals.clientRequestId = incoming;
  res.locals.requestId = id;
  res.setHeader(REQUEST_ID_HEADER, id);
}

function meta(res: Reply, extra?: Omit<Meta, "endpoint" | "request_id">): Meta {
  // Routes set their template; answers given before routing look it up (never the raw path of a known route).
  const endpoint = res.locals.endpoint ?? endpointOf(pathOf(res.req.url ?? "/"));
  return { endpoint, request_id: res.locals.requestId, ...extra };
}

/**
 * Writes a JSON answer as Express's `res.json` does (same headers, no ETag, no body for HEAD), with
 * Node's API alone, in one write: headers and body go out together.
 */
function writeJson(res: Reply, status: number, json: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(json));
  if (res.req.method === "HEAD") res.end();
  else res.end(json);
}

export function sendData(
  res: Reply,
  data: unknown,
  extra?: Omit<Meta, "endpoint" | "request_id">,
  /** 202: done in part, the rest follows (a top-up whose credit is pending). */
  status: 200 | 202 = 200,
): void {
  writeJson(res, status, JSON.stringify({ data, error: null, meta: meta(res, extra) }));
}

/**
 * sendData for data already serialised (rpc-proxy's `data_json`): spliced into the envelope as it
 * came, not parsed and written again. The bytes are those of sendData(JSON.parse(dataJson)): rpc-proxy
 * writes it with JSON.stringify.
 */
export function sendDataJson(
  res: Reply,
  dataJson: string,
  extra?: Omit<Meta, "endpoint" | "request_id">,
): void {
  writeJson(res, 200, dataJsonBody(res, dataJson, extra));
}

/** The body sendDataJson writes. */
export function dataJsonBody(res: Reply, dataJson: string, extra?: Omit<Meta, "endpoint" | "request_id">) {
  // JSON-RPC: the node's answers as they are, no envelope.
  const rpc = res.locals.jsonRpc;
  if (rpc) return rpc.answer(dataJson);
  return `{"data":${dataJson},"error":null,"meta":${JSON.stringify(meta(res, extra))}}`;
}

/** An answer given before, written again as it was (a payment identifier's retry). */
export function sendAgain(res: Reply, status: number, body: string): void {
  writeJson(res, status, body);
}

/** An RFC 9457 problem a payment protocol defines for a refusal (payment-verifier names it). */
export interface Problem {
  type: string;
  title: string;
  detail: string;
}

export function sendError(
  res: Reply,
  code: ErrorCode,
  message: string,
  extra?: Record<string, unknown>,
  /** A charged failure (a revert, a not-found from the node) carries the payment's meta like a success. */
  paid?: Omit<Meta, "endpoint" | "request_id">,
  /**
   * A payment protocol's problem (MPP's): its members join the envelope at the top level, so the
   * body is our envelope and an RFC 9457 problem document at once.
   */
  problem?: Problem | null,
): void {
  writeJson(res, ERRORS[code].status, errorBody(res, code, message, extra, paid, problem));
}

/** The body sendError writes. */
export function errorBody(
  res: Reply,
  code: ErrorCode,
  message: string,
  extra?: Record<string, unknown>,
  paid?: Omit<Meta, "endpoint" | "request_id">,
  problem?: Problem | null,
): string {
  const rpc = jsonRpcOf(res);
  if (rpc) return rpcErrorBody(rpc, code, message, { ...extra, request_id: res.locals.requestId });
  const error: ErrorBody = { code, message, ...extra };
  const status = ERRORS[code].status;
  // Only a payment refusal (402) is a protocol's problem; an outage stays a plain 503.
  const members =
    problem && status === 402
      ? { type: problem.type, title: problem.title, status, detail: problem.detail }
      : {};
  return JSON.stringify({ data: null, error, meta: meta(res, paid), ...members });
}

/** The flat shape of spec 7 for 429s: `error` is the code itself. */
export function sendLimit(res: Reply, code: LimitErrorCode, payPerCall: string): void {
  if (code === "rate_limited") res.setHeader("Retry-After", "1");
  const rpc = jsonRpcOf(res);
  if (rpc) {
    writeJson(
      res,
      429,
      rpcErrorBody(rpc, code, LIMIT_ERRORS[code](payPerCall), { request_id: res.locals.requestId }),
    );
    return;
  }
  writeJson(
    res,
    429,
    JSON.stringify({
      error: code,
      message: LIMIT_ERRORS[code](payPerCall),
      request_id: res.locals.requestId,
    }),
  );
}
