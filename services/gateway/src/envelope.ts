import { randomUUID } from "node:crypto";
import { ERRORS, type ErrorCode, LIMIT_ERRORS, type LimitErrorCode } from "@tollgate/catalog";
import type { NextFunction, Request, Response } from "express";
import { endpointOf } from "./routes/table.ts";

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
    }
  }
}

// A caller's id is logged for correlation only when it is safe to echo into logs.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * Every request gets an id generated here, unique per request: `meta.request_id`, the
 * `X-Request-Id` response header, and the key of everything that happens once for it inside the
 * mesh (usage, refunds, payments, events). A client's own `X-Request-Id` is only written to the
 * access log (`client_request_id`), never used as a key: clients retry with the same id.
 */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const id = randomUUID();
  const incoming = req.get("x-request-id");
  if (incoming && CLIENT_REQUEST_ID.test(incoming)) res.locals.clientRequestId = incoming;
  res.locals.requestId = id;
  res.setHeader("X-Request-Id", id);
  next();
}

function meta(res: Response, extra?: Omit<Meta, "endpoint" | "request_id">): Meta {
  // Routes set their template; answers given before routing look it up (never the raw path of a known route).
  const endpoint = res.locals.endpoint ?? endpointOf(res.req.path);
  return { endpoint, request_id: res.locals.requestId, ...extra };
}

export function sendData(res: Response, data: unknown, extra?: Omit<Meta, "endpoint" | "request_id">): void {
  res.status(200).json({ data, error: null, meta: meta(res, extra) });
}

/** An RFC 9457 problem a payment protocol defines for a refusal (payment-verifier names it). */
export interface Problem {
  type: string;
  title: string;
  detail: string;
}

export function sendError(
  res: Response,
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
  const error: ErrorBody = { code, message, ...extra };
  const status = ERRORS[code].status;
  // Only a payment refusal (402) is a protocol's problem; an outage stays a plain 503.
  const members =
    problem && status === 402
      ? { type: problem.type, title: problem.title, status, detail: problem.detail }
      : {};
  res.status(status).json({ data: null, error, meta: meta(res, paid), ...members });
}

/** The flat shape of spec 7 for 429s: `error` is the code itself. */
export function sendLimit(res: Response, code: LimitErrorCode, payPerCall: string): void {
  if (code === "rate_limited") res.setHeader("Retry-After", "1");
  res
    .status(429)
    .json({ error: code, message: LIMIT_ERRORS[code](payPerCall), request_id: res.locals.requestId });
}
