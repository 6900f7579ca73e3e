// Server-side sessions. The cookie carries 256 random bits; the store keeps only their SHA-256,
// so a read of the store cannot be replayed as a cookie. Each session has its own CSRF token
// (double submit: the page reads it from the API and sends it back in a header).
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Kv } from "./kv.ts";

export interface Session {
  accountId: string;
  address: string;
  status: string;
  accountCreatedAt: string;
  csrf: string;
  expiresAt: string;
}

const digest = (id: string) => createHash("sha256").update(id).digest("hex");
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export function createSessions(deps: { kv: Kv; now: () => number; ttlMs: number }) {
  return {
    async start(s: Omit<Session, "csrf" | "expiresAt">): Promise<{ id: string; session: Session }> {
      const id = randomBytes(32).toString("base64url");
      const session: Session = {
        ...s,
        csrf: randomBytes(32).toString("base64url"),
        expiresAt: new Date(deps.now() + deps.ttlMs).toISOString(),
      };
      await deps.kv.set(`s:${digest(id)}`, JSON.stringify(session), deps.ttlMs);
      return { id, session };
    },

    async read(id: string | undefined): Promise<Session | undefined> {
      if (!id || !SESSION_ID.test(id)) return undefined;
      const raw = await deps.kv.get(`s:${digest(id)}`);
      return raw ? (JSON.parse(raw) as Session) : undefined;
    },

    async end(id: string): Promise<void> {
      await deps.kv.del(`s:${digest(id)}`);
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;

/** Constant-time comparison of the presented CSRF token with the session's. */
export function csrfMatches(session: Session, presented: string | undefined): boolean {
  if (!presented) return false;
  const a = Buffer.from(session.csrf);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}
