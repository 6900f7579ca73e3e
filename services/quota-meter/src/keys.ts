import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * API keys: `tg_live_` + 32 random bytes (base64url, 256 bits of entropy). Only an
 * HMAC-SHA256 of the key under a server pepper is stored, so a leaked database does not
 * leak usable keys, and the pepper (a secret kept apart from the data) is needed to test
 * guesses offline.
 */
const API_KEY_PREFIX = "tg_live_";
const API_KEY_RE = /^tg_live_[A-Za-z0-9_-]{43}$/;
/** Characters shown in listings: enough to recognise a key, never enough to use it. */
const DISPLAY_PREFIX_LENGTH = 12;

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString("base64url");
}

/** Rejects what cannot be a key before any hashing or store work. */
export function isWellFormedKey(key: string): boolean {
  return API_KEY_RE.test(key);
}

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}

export type KeyHasher = (key: string) => Buffer;

export function createKeyHasher(pepper: string): KeyHasher {
  return (key) => createHmac("sha256", pepper).update(key).digest();
}

/** Constant-time equality of two key hashes. */
export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function newAccountId(): string {
  return `acct_${randomBytes(10).toString("hex")}`;
}

export function newKeyId(): string {
  return `key_${randomBytes(8).toString("hex")}`;
}
