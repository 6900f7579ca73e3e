// A JSON body's bytes as received, kept beside its parsed value: a paid POST's request digest is
// of these exact bytes (auth/payment.ts), not of what parsing made of them.
import type { IncomingMessage } from "node:http";

const RAW = Symbol("rawBody");

type Kept = IncomingMessage & { [RAW]?: Buffer };

/** express.json's `verify` hook: keeps a reference to the bytes it parses (no copy). */
export function keepRawBody(req: IncomingMessage, _res: unknown, buf: Buffer): void {
  (req as Kept)[RAW] = buf;
}

/** The body's bytes as express.json read them; undefined when it read none. */
export function rawBodyOf(req: IncomingMessage): Buffer | undefined {
  return (req as Kept)[RAW];
}
