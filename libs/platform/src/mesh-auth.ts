// Who may call the mesh's gRPC services. Each caller (the gateway; later the dashboard) holds
// one random token and sends it on every call; each service holds only the SHA-256 digests of
// the tokens it accepts, and which methods each caller may call. A digest verifies a token but
// cannot be presented as one, so a compromised service cannot impersonate its callers towards
// the others. Why tokens and not mTLS: SECURITY.md.
import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import { ConfigError } from "./env.ts";
import { readSecret } from "./secrets.ts";

/**
 * gRPC metadata key carrying the caller's mesh token. Not `authorization`: the admin API
 * reads the operator's token there, and the two must never be confused.
 */
export const MESH_TOKEN_KEY = "tollgate-mesh-token";

/** Accepted callers: name → hex SHA-256 digests of the tokens it may present (two during a rotation). */
export type MeshCallers = Readonly<Record<string, readonly string[]>>;

/** For one service: per caller name, the methods it may call. Absent callers may call nothing. */
export type CallerPolicy = Readonly<Record<string, readonly string[]>>;

/** 32 random bytes hex- or base64url-encoded are 43+ characters; shorter is refused. */
const MIN_TOKEN_LENGTH = 32;
const DIGEST = /^[0-9a-f]{64}$/;

/** A fresh mesh token: 256 random bits, base64url. */
export function generateMeshToken(): string {
  return randomBytes(32).toString("base64url");
}

/** What a service is configured with for a caller's token: its SHA-256, hex. */
export function meshTokenDigest(token: string): string {
  return hash("sha256", token, "hex");
}

/** `MESH_CALLER_<NAME>_SHA256`: where a service reads the digests of a caller's tokens. */
export function meshCallerEnv(caller: string): string {
  return `MESH_CALLER_${caller.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_SHA256`;
}

/** The calling service's own token, from MESH_TOKEN or MESH_TOKEN_FILE. */
export function readMeshToken(): string {
  const token = readSecret("MESH_TOKEN");
  if (!token) {
    throw new ConfigError(
      "MESH_TOKEN (or MESH_TOKEN_FILE) is not set: the token this service presents to quota-meter, payment-verifier and rpc-proxy",
    );
  }
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new ConfigError(
      `MESH_TOKEN is shorter than ${MIN_TOKEN_LENGTH} characters: use 32 random bytes (openssl rand -hex 32)`,
    );
  }
  return token;
}

/**
 * The callers a service accepts, from `MESH_CALLER_<NAME>_SHA256` (comma-separated digests
 * while a token is rotated). A required caller without digests is a configuration error:
 * the service would refuse every call it exists to serve.
 */
export function readMeshCallers(required: readonly string[], optional: readonly string[] = []): MeshCallers {
  const callers: Record<string, string[]> = {};
  for (const name of [...required, ...optional]) {
    const env = meshCallerEnv(name);
    const value = process.env[env]?.trim();
    if (!value) {
      if (required.includes(name)) {
        throw new ConfigError(
          `${env} is not set: the SHA-256 (hex) of the ${name}'s MESH_TOKEN (printf %s "$TOKEN" | sha256sum)`,
        );
      }
      continue;
    }
    const digests = value.split(",").map((d) => d.trim().toLowerCase());
    if (!digests.every((d) => DIGEST.test(d))) {
      throw new ConfigError(`${env} must hold SHA-256 digests in hex (64 characters each, comma-separated)`);
    }
    callers[name] = digests;
  }
  return callers;
}

/** Why a call was refused, as counted in `grpc_server_refused_total{reason}`. */
export type Refusal = "missing_token" | "unknown_token" | "not_allowed";

/**
 * Names the caller behind a presented token, comparing it in constant time with every
 * accepted digest (no early exit, so timing tells nothing about which one matched).
 */
export function meshIdentifier(callers: MeshCallers): (token: string) => string | undefined {
  const entries = Object.entries(callers).flatMap(([name, digests]) =>
    digests.map((d) => ({ name, digest: Buffer.from(d, "hex") })),
  );
  return (token) => {
    const presented = hash("sha256", token, "buffer");
    let caller: string | undefined;
    for (const entry of entries) {
      if (timingSafeEqual(entry.digest, presented)) caller = entry.name;
    }
    return caller;
  };
}
