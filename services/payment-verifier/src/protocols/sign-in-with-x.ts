// x402's `sign-in-with-x` extension (CAIP-122; EIP-4361 messages on EVM chains), with the official
// helpers of @x402/extensions: the 402's declaration (a fresh server nonce, issuedAt, a 5-minute
// expiry, this deployment's domain and the resource's URI, the chains accepted), and the check of a
// SIGN-IN-WITH-X proof: parsed, its fields validated against this deployment's public origin and
// the time window, its signature verified (a smart wallet's with a read of the settlement chain),
// then its nonce used up in the shared store so no replica serves the proof twice. Not a payment:
// a valid proof names a wallet, which the gateway serves on that wallet's account.
//
// The public origin is the gateway's PUBLIC_BASE_URL, the one place it is configured: every call
// names its resource's URL under it (never the caller's Host), and the origin is read from that URL.
import {
  createSIWxResourceServerExtension,
  declareSIWxExtension,
  type EVMMessageVerifier,
  parseSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxPayload,
  type SIWxStorage,
  validateSIWxMessage,
  verifySIWxSignature,
} from "@x402/extensions/sign-in-with-x";
import type { NonceUse, SignInNonceStore } from "../stores/sign-in-nonces.ts";

/** How long a proof is good for after its issuedAt (the extension's default, and its 402's expiry). */
export const SIGN_IN_MAX_AGE_MS = 5 * 60_000;
/**
 * How far ahead of this replica's clock an issuedAt may be (another replica issued the 402): taken
 * as now. Also how much longer than that window a used nonce is remembered.
 */
const CLOCK_SKEW_MS = 5_000;
/** Far above a real proof (under 1 KB); refused before anything is decoded. */
const MAX_PROOF_CHARS = 8_192;
/** EIP-4361's nonce (at least 8 alphanumerics), bounded: it is a key of the shared store. */
const NONCE = /^[A-Za-z0-9]{8,64}$/;
const STATEMENT =
  "Sign in to Tollgate: this call is served on your wallet's account (its plan, then its credits); no payment is taken.";

/** The extension's failure codes, and ours for a header that is not a proof at all. */
type SignInCode = `invalid_siwx_${string}`;

export type SignInOutcome =
  | { valid: true; wallet: string; chainId: string }
  | {
      valid: false;
      error: "invalid" | "rate_limited" | "service_unavailable";
      code: SignInCode | "rate_limited" | "service_unavailable";
      reason: string;
    };

export interface SignInRequest {
  /** The mesh's id of the request: the holder of the nonce it uses. */
  requestId: string;
  /** The call's URL under the public origin (the gateway's PUBLIC_BASE_URL). */
  url: string;
  /** The SIGN-IN-WITH-X header as received. */
  proof: string;
  /** The client's address, for the attempt limit. */
  client: string;
}

export interface SignInOptions {
  /** The EVM chains (CAIP-2) a proof may name: the settlement chain, where smart wallets are read. */
  chains: readonly string[];
  nonces: SignInNonceStore;
  /**
   * Counts one attempt against the client's limit: the scope refused when it is full. Counted before
   * any signature is checked, so a flood of forged proofs costs its sender a 429, not us the work.
   */
  countAttempt(client: string): Promise<string | undefined>;
  /** Checks signatures recovery cannot (EIP-1271, EIP-6492); unset: EOA signatures only. */
  evmVerifier?: EVMMessageVerifier;
  /** Observed once per proof, with "valid" or the refusal's code. */
  observe?(outcome: string, seconds: number): void;
}

/** The server extension keeps no payment history here: only its 402 declaration is used. */
const NO_HISTORY: SIWxStorage = { hasPaid: () => false, recordPayment: () => undefined };
/** Origins seen (one per gateway configuration): their extension objects, a few at most. */
const ORIGINS_MAX = 8;

/** The http(s) origin of an absolute URL; undefined for a relative one (no public origin configured). */
function originOf(url: string): string | undefined {
  const parsed = URL.parse(url);
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) return undefined;
  return parsed.origin;
}

export class SignInWithX {
  readonly #opts: SignInOptions;
  readonly #extensions = new Map<string, ReturnType<typeof createSIWxResourceServerExtension>>();
  readonly #declaration;

  constructor(opts: SignInOptions) {
    this.#opts = opts;
    this.#declaration = declareSIWxExtension({
      statement: STATEMENT,
      network: [...opts.chains],
      expirationSeconds: SIGN_IN_MAX_AGE_MS / 1000,
    })[SIGN_IN_WITH_X];
  }

  /**
   * The `extensions` entry of a 402 for `url` (a fresh nonce and issuedAt each time), or nothing
   * when the URL has no public origin to bind a proof to.
   */
  async declare(url: string): Promise<Record<string, unknown> | undefined> {
    const origin = originOf(url);
    if (!origin) return undefined;
    let extension = this.#extensions.get(origin);
    if (!extension) {
      if (this.#extensions.size >= ORIGINS_MAX) this.#extensions.clear();
      extension = createSIWxResourceServerExtension({ origin, storage: NO_HISTORY });
      this.#extensions.set(origin, extension);
    }
    const info = await extension.enrichPaymentRequiredResponse?.(this.#declaration, {
      requirements: [],
      resourceInfo: { url },
      error: "",
      paymentRequiredResponse: { x402Version: 2, resource: { url }, accepts: [] },
    } as never);
    return info === undefined ? undefined : { [SIGN_IN_WITH_X]: info };
  }

  async verify(req: SignInRequest): Promise<SignInOutcome> {
    const started = performance.now();
    const outcome = await this.#verify(req);
    this.#opts.observe?.(outcome.valid ? "valid" : outcome.code, (performance.now() - started) / 1000);
    return outcome;
  }

  async #verify(req: SignInRequest): Promise<SignInOutcome> {
    const o = this.#opts;
    const origin = originOf(req.url);
    if (!origin) {
      return invalid(
        "invalid_siwx_domain_mismatch",
        "sign-in-with-x is not available here: this deployment names no public origin to bind proofs to (the gateway's PUBLIC_BASE_URL)",
      );
    }
    // A store that cannot count does not stop a proof: its own checks and its nonce's still stand.
    const limited = await o.countAttempt(req.client).catch(() => undefined);
    if (limited) {
      return {
        valid: false,
        error: "rate_limited",
        code: "rate_limited",
        reason: `too many sign-in attempts from this ${limited}`,
      };
    }
    const value = req.proof.trim();
    if (!value) return invalid("invalid_siwx_header", "SIGN-IN-WITH-X is empty");
    if (value.length > MAX_PROOF_CHARS) {
      return invalid("invalid_siwx_header", `SIGN-IN-WITH-X is over ${MAX_PROOF_CHARS} characters`);
    }
    let payload: SIWxPayload;
    try {
      payload = parseSIWxHeader(value);
    } catch (err) {
      return invalid(
        "invalid_siwx_header",
        `${messageOf(err)} (SIGN-IN-WITH-X is base64 of the JSON proof the official client signs from the 402's "sign-in-with-x" extension)`,
      );
    }
    // Checked here so that nothing malformed reaches the chain verifier (whose errors are outages).
    if (!/^0x[0-9a-fA-F]{40}$/.test(payload.address)) {
      return invalid("invalid_siwx_header", "address: expected a 0x EVM address (40 hex digits)");
    }
    if (!/^0x(?:[0-9a-fA-F]{2})+$/.test(payload.signature)) {
      return invalid("invalid_siwx_malformed_signature", "signature: expected 0x and hex bytes");
    }
    if (!NONCE.test(payload.nonce)) {
      return invalid("invalid_siwx_nonce", "nonce: expected 8 to 64 letters and digits (EIP-4361)");
    }
    if (!o.chains.includes(payload.chainId)) {
      return invalid(
        "invalid_siwx_unsupported_chain",
        `chainId: ${JSON.stringify(payload.chainId.slice(0, 64))} is not accepted here; accepted: ${o.chains.join(", ")}`,
      );
    }
    const now = Date.now();
    const fields = await validateSIWxMessage(withinSkew(payload, now), new URL(origin), {
      maxAge: SIGN_IN_MAX_AGE_MS,
    });
    if (!fields.isValid) return invalid(fields.invalidReason, fields.invalidMessage);
    let signed: Awaited<ReturnType<typeof verifySIWxSignature>>;
    try {
      signed = await verifySIWxSignature(payload, o.evmVerifier ? { evmVerifier: o.evmVerifier } : {});
    } catch (err) {
      // The message could not be rebuilt from the fields (an address or field EIP-4361 refuses).
      return invalid("invalid_siwx_header", `not a valid EIP-4361 message: ${messageOf(err)}`);
    }
    if (!signed.isValid) {
      // The one verifier that throws is the settlement chain's (a smart wallet's check): an outage.
      if (signed.invalidReason === "invalid_siwx_verifier_error") {
        return unavailable("the settlement chain could not be read to check this wallet's signature");
      }
      return invalid(signed.invalidReason, signed.invalidMessage);
    }
    // Used up only now, once the proof is known to be its wallet's: a refused proof stores nothing.
    const ttlMs = Date.parse(payload.issuedAt) + SIGN_IN_MAX_AGE_MS + CLOCK_SKEW_MS - now;
    let use: NonceUse;
    try {
      use = await o.nonces.use(payload.nonce, req.requestId, Math.max(ttlMs, CLOCK_SKEW_MS));
    } catch {
      return unavailable("sign-in replay protection is unavailable");
    }
    if (use === "used") {
      return invalid(
        "invalid_siwx_nonce",
        "this proof was used already: a proof is served once; sign a fresh one (every 402 carries a new nonce)",
      );
    }
    return { valid: true, wallet: signed.payer.toLowerCase(), chainId: payload.chainId };
  }
}

/**
 * The payload the field checks see: an issuedAt at most CLOCK_SKEW_MS ahead of this replica's
 * clock (the 402 came from a replica whose clock runs ahead) counts as now. The signature is
 * checked against the proof as sent.
 */
function withinSkew(payload: SIWxPayload, now: number): SIWxPayload {
  const issued = Date.parse(payload.issuedAt);
  if (!(issued > now && issued <= now + CLOCK_SKEW_MS)) return payload;
  return { ...payload, issuedAt: new Date(now).toISOString() };
}

function invalid(code: SignInCode, reason: string): SignInOutcome {
  return { valid: false, error: "invalid", code, reason };
}

function unavailable(reason: string): SignInOutcome {
  return { valid: false, error: "service_unavailable", code: "service_unavailable", reason };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
