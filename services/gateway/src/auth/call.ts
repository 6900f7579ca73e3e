// What every auth method is handed and must honour: one validated chain call, ready to run once,
// and the charging rule that decides, from its outcome, whether the call is paid for.
import { type Endpoint, type ErrorCode, isCharged } from "@tollgate/catalog";
import { CallError } from "@tollgate/platform";
import type { Request, Response } from "express";
import type { Reply } from "../envelope.ts";
import { publicError } from "../upstream-errors.ts";
import type { Credentials } from "./credentials.ts";

/** What the node call gave: its data (as rpc-proxy serialised it), or the public error it ended in. */
export type Outcome =
  | { ok: true; dataJson: string }
  | { ok: false; code: ErrorCode; message: string; extra?: Record<string, unknown> };

/** The call's one rpc-proxy request; an auth method starts it at most once. */
export type Execute = () => Promise<Outcome>;

/** The credentials of one kind (see readCredentials). */
export type CredentialsOf<K extends Credentials["kind"]> = Extract<Credentials, { kind: K }>;

/** What an auth method may read of the request: the client's address (after `trust proxy`). */
export interface Caller {
  readonly ip: string | undefined;
}

/**
 * An auth method, made once per router by its factory (apiKeyAuth, signInAuth, paymentAuth): given a validated call and the credentials
 * of its kind, it decides whether the call is served, runs `execute` at most once, answers, and
 * accounts for it. Positional arguments rather than a context object: this is every paid call's
 * path, and nothing is allocated for the dispatch.
 */
export type AuthMethod<C extends Credentials, Req extends Caller = Request, Res extends Reply = Response> = (
  endpoint: Endpoint,
  network: string,
  credentials: C,
  execute: Execute,
  req: Req,
  res: Res,
) => Promise<void>;

/** The charging rule, for every way to pay: the node answered (data, a revert, a not-found). */
export function charged(outcome: Outcome): boolean {
  return outcome.ok || isCharged(outcome.code);
}

/** A failed mesh call as the public error it ends in; anything else is a bug, rethrown. */
export function failureOf(err: unknown): Outcome {
  if (err instanceof CallError) return { ok: false, ...publicError(err.failure) };
  throw err;
}
