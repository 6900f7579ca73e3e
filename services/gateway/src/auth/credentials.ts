// Which auth method a request asks for, read from its headers alone (no I/O, no verification).

import type { IncomingMessage } from "node:http";
import { PAYMENT_HEADERS, SIGN_IN_HEADER } from "@tollgate/catalog";
import type { Header } from "../clients/payment-verifier.ts";

/** How a request asks to be served (spec 5). */
export type Credentials =
  | { kind: "api_key"; apiKey: string }
  /** x402 sign-in-with-x: the SIGN-IN-WITH-X header as received (payment-verifier reads it). */
  | { kind: "sign_in"; proof: string }
  | { kind: "payment"; headers: Header[] }
  | { kind: "invalid"; reason: string }
  | { kind: "none" };

/** Payment headers forwarded untouched to payment-verifier (names are case-insensitive). */
const PAYMENT_CREDENTIALS = [PAYMENT_HEADERS.signature.name, PAYMENT_HEADERS.signatureV1.name].map((n) =>
  n.toLowerCase(),
);
const SIGN_IN = SIGN_IN_HEADER.name.toLowerCase();

// Keys are opaque to the gateway; this only rejects what cannot be a key at all. The
// scheme name is case-insensitive and one or more spaces follow it (RFC 9110 §11.1, §11.4);
// the surrounding whitespace is trimmed.
const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]{1,256})$/i;

/**
 * Reads the credentials of a request. An API key wins when a request carries a key and a
 * sign-in or a payment, and a sign-in wins over a payment, so an account holder is never charged
 * by accident.
 */
export function readCredentials(req: Pick<IncomingMessage, "headers">): Credentials {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const bearer = BEARER.exec(authorization.trim());
    if (bearer?.[1]) return { kind: "api_key", apiKey: bearer[1] };
  }
  const proof = req.headers[SIGN_IN];
  if (typeof proof === "string") return { kind: "sign_in", proof };
  if (authorization !== undefined) {
    if (/^Payment\s/i.test(authorization)) {
      return { kind: "payment", headers: [{ name: "authorization", value: authorization }] };
    }
    return {
      kind: "invalid",
      reason: "Authorization must be `Bearer <API key>`",
    };
  }
  const headers: Header[] = [];
  for (const name of PAYMENT_CREDENTIALS) {
    const value = req.headers[name];
    if (typeof value === "string") headers.push({ name, value });
  }
  return headers.length > 0 ? { kind: "payment", headers } : { kind: "none" };
}
