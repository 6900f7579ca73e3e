// The x402 v2 protocol, once for every x402 scheme: the header codec (PAYMENT-SIGNATURE in,
// PAYMENT-REQUIRED and PAYMENT-RESPONSE out, each base64 JSON), and ONE official x402ResourceServer
// that every x402 scheme registers its server implementation on, with the facilitators behind it.
// A 402 lists every scheme's offers in one PAYMENT-REQUIRED header.
//
// Facilitators are learned at start-up (`initialize`, their /supported kinds). One that is down
// leaves only its schemes out; it is asked again at most once a second, and a fresh resource server
// replaces the old one only once it initialised, so serving schemes never see a half-built registry.
// Each 402 also declares the `bazaar` extension (bazaar.ts: the call described from the catalog, with
// the service's name and tags on `resource`), and `sign-in-with-x` (sign-in-with-x.ts) when it is on.
import { createHash } from "node:crypto";
import { DISCOVERY_SERVICE, PAYMENT_HEADERS } from "@tollgate/catalog";
import { PaymentPayloadV2Schema } from "@x402/core/schemas";
import { type FacilitatorClient, x402ResourceServer } from "@x402/core/server";
import type {
  Network,
  PaymentPayload,
  PaymentRequirements,
  SchemeNetworkServer,
  SettleResponse,
  VerifyResponse,
} from "@x402/core/types";
import {
  declarePaymentIdentifierExtension,
  extractPaymentIdentifier,
  PAYMENT_IDENTIFIER,
  paymentIdentifierResourceServerExtension,
  validatePaymentIdentifier,
} from "@x402/extensions/payment-identifier";
import {
  FacilitatorUnavailableError,
  findHeader,
  type Header,
  type Identification,
  type PaymentProtocol,
  type PricedCall,
} from "../core/types.ts";
import { bazaarExtension } from "./bazaar.ts";
import type { SignInWithX } from "./sign-in-with-x.ts";

/**
 * The SDK's header encoding (base64 of the JSON's UTF-8 bytes), with Node's encoder instead of its
 * byte-by-byte string building (~30x the CPU here): the same header, on every 402 and receipt.
 */
function base64Json(value: unknown): string {
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64");
}

/** Far above any real payload (a few KB); refuse before decoding anything larger. */
const MAX_HEADER_CHARS = 16_384;
/** How many credentials found valid are remembered (see #checked). */
const CHECKED_MAX = 1_024;
/** How often a facilitator that could not be reached is asked again, at most. */
const INIT_RETRY_MS = 1_000;

/**
 * The extensions every 402 declares: payment-identifier, optional (a payment without an identifier
 * is served as always; one with an identifier gets its first answer again on a retry: core/answers.ts).
 */
const EXTENSIONS = { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false) };

/** JSON with every object's keys sorted: one text per value, however a client ordered it. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

const SIGNATURE = PAYMENT_HEADERS.signature.name;
const SIGNATURE_V1 = PAYMENT_HEADERS.signatureV1.name;

export interface X402Registration {
  network: Network;
  server: SchemeNetworkServer;
}

export class X402Protocol implements PaymentProtocol<PaymentPayload, PaymentRequirements> {
  readonly name = "x402";
  readonly #facilitators: readonly FacilitatorClient[];
  readonly #registrations: X402Registration[] = [];
  #server: x402ResourceServer | undefined;
  #initializing: Promise<void> | undefined;
  #lastAttempt = 0;
  #lastError = "";
  /**
   * Header values already checked against the PaymentPayload schema: Verify and Settle (or Release)
   * of a call decode the same one, and the schema check (zod) costs as much as a voucher's signature
   * recovery. Each decode still parses its own object; only the check is skipped. Oldest out first.
   */
  readonly #checked = new Set<string>();
  /** Declares sign-in-with-x in every 402, when set. */
  readonly #signIn: SignInWithX | undefined;

  constructor(facilitators: readonly FacilitatorClient[], signIn?: SignInWithX) {
    this.#facilitators = facilitators;
    this.#signIn = signIn;
  }

  /** A scheme registers its official server implementation for a network (before `ready`). */
  register(registration: X402Registration): void {
    this.#registrations.push(registration);
    this.#server?.register(registration.network, registration.server);
  }

  /**
   * The resource server, once some facilitator told us what it supports and `scheme` on `network`
   * is among it. Otherwise FacilitatorUnavailableError (the scheme is left out for now), or an
   * Error when a reachable facilitator does not support it (a configuration mistake).
   */
  async ready(scheme: string, network: Network): Promise<x402ResourceServer> {
    const current = this.#server;
    if (current?.getSupportedKind(2, network, scheme)) return current;
    if (!this.#initializing && Date.now() - this.#lastAttempt < INIT_RETRY_MS) {
      throw new FacilitatorUnavailableError(
        `x402 facilitator for ${scheme} unreachable (retrying): ${this.#lastError}`,
      );
    }
    this.#initializing ??= this.#initialize().finally(() => {
      this.#initializing = undefined;
    });
    await this.#initializing;
    const server = this.#server as x402ResourceServer | undefined;
    if (server?.getSupportedKind(2, network, scheme)) return server;
    throw new FacilitatorUnavailableError(
      `no x402 facilitator supports ${scheme} on ${network} right now: ${this.#lastError}`,
    );
  }

  /** True when a facilitator answered and none of them supports `scheme` on `network`. */
  unsupported(scheme: string, network: Network): boolean {
    return (
      this.#lastError === "" &&
      this.#server !== undefined &&
      !this.#server.getSupportedKind(2, network, scheme)
    );
  }

  async #initialize(): Promise<void> {
    this.#lastAttempt = Date.now();
    const failures: string[] = [];
    // Only facilitators that answer go into the new server: initialize() would log and skip the
    // others itself, and we want to say which one failed and why.
    const answered = await Promise.all(
      this.#facilitators.map((f) =>
        f.getSupported().then(
          (supported) => ({ client: f, supported }),
          (err: unknown) => {
            failures.push(err instanceof Error ? String(err.cause ?? err.message) : String(err));
            return undefined;
          },
        ),
      ),
    );
    this.#lastError = failures.join("; ");
    const up = answered.filter((a) => a !== undefined);
    if (up.length === 0) return;
    // Each facilitator answers /supported once per initialisation.
    const next = new x402ResourceServer(
      up.map(({ client, supported }) => ({
        verify: (payload, requirements) => client.verify(payload, requirements),
        settle: (payload, requirements) => client.settle(payload, requirements),
        getSupported: async () => supported,
      })),
    );
    for (const r of this.#registrations) next.register(r.network, r.server);
    next.registerExtension(paymentIdentifierResourceServerExtension);
    try {
      await next.initialize();
    } catch (err) {
      this.#lastError = err instanceof Error ? err.message : String(err);
      return;
    }
    this.#server = next;
  }

  decode(credentials: readonly Header[]) {
    const header = findHeader(credentials, SIGNATURE) ?? findHeader(credentials, SIGNATURE_V1);
    if (!header) return { kind: "absent" as const };
    const name = header.name.toUpperCase();
    const value = header.value.trim();
    const invalid = (reason: string) => ({ kind: "invalid" as const, reason });
    if (!value) return invalid(`${name} is empty`);
    if (value.length > MAX_HEADER_CHARS) return invalid(`${name} is too large`);
    // A credential checked before (Verify's, now at Settle) is base64 already.
    const checked = this.#checked.has(value);
    if (!checked && (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 === 1)) {
      return invalid(`${name} is not base64 (expected base64 of a JSON PaymentPayload)`);
    }
    let json: unknown;
    try {
      // What the SDK's decodePaymentSignatureHeader does, with Node's base64 decoder instead of its
      // atob and byte-by-byte copy (a measurable share of a voucher call, done at Verify and Settle).
      json = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
    } catch {
      return invalid(`${name} does not decode to JSON (expected base64 of a JSON PaymentPayload)`);
    }
    if ((json as { x402Version?: unknown } | null)?.x402Version === 1) {
      return invalid("x402 v1 payment payloads are not accepted; pay with x402 v2 (PAYMENT-SIGNATURE)");
    }
    if (checked) return { kind: "credential" as const, credential: json as PaymentPayload };
    const parsed = PaymentPayloadV2Schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? issue.path.join(".") : "payload";
      return invalid(`${name} is not an x402 v2 PaymentPayload: ${where}: ${issue?.message}`);
    }
    const payload = json as PaymentPayload;
    if (!/^[0-9]{1,78}$/.test(payload.accepted.amount)) {
      return invalid(`${name} is not an x402 v2 PaymentPayload: accepted.amount: expected an integer string`);
    }
    if (this.#checked.size >= CHECKED_MAX)
      this.#checked.delete(this.#checked.values().next().value as string);
    this.#checked.add(value);
    return { kind: "credential" as const, credential: payload };
  }

  /**
   * One PAYMENT-REQUIRED listing every offer of every x402 scheme that is up. With the payload a
   * client sent, a scheme may enrich its offer for that client (e.g. batch-settlement's corrective
   * offer carrying the channel's state).
   */
  async render(
    call: PricedCall,
    offers: readonly PaymentRequirements[],
    error: string,
    payload?: PaymentPayload,
  ): Promise<Header[]> {
    const server = this.#server;
    if (!server) return [];
    const url = call.url || call.endpoint.path;
    const paymentRequired = await server.createPaymentRequiredResponse(
      [...offers],
      {
        url,
        description: call.endpoint.summary,
        mimeType: "application/json",
        serviceName: DISCOVERY_SERVICE.name,
        tags: [...DISCOVERY_SERVICE.tags],
      },
      error || "Payment required",
      { ...EXTENSIONS, ...bazaarExtension(call.endpoint, url) },
      undefined,
      payload,
    );
    // A returning wallet may sign in instead of paying for a call: a fresh challenge in its every
    // 402 (not a top-up's: signing in buys no credits).
    const signIn = call.endpoint.topUp ? undefined : await this.#signIn?.declare(call.url);
    if (signIn) paymentRequired.extensions = { ...paymentRequired.extensions, ...signIn };
    return [{ name: PAYMENT_HEADERS.required.name, value: base64Json(paymentRequired) }];
  }

  /**
   * The payment-identifier extension's `id`, checked by the package's own validation (the `info`
   * the client sent, against the format the declaration states; the client's echo of the
   * declaration's JSON Schema is not compiled: it is ours, and compiling what a caller sends would
   * cost every payment a schema compilation). The echo of our declaration without an `id` (which
   * the official client sends with every payment) is none. `payment` is what was signed: the
   * scheme's payload and the terms it accepted, canonical JSON (for `exact` the EIP-3009
   * authorization and its signature; for x402-batch the voucher, or the deposit and its voucher).
   */
  identify(payload: PaymentPayload): Identification {
    const extension = payload.extensions?.[PAYMENT_IDENTIFIER];
    if (extension === undefined) return { kind: "none" };
    const info = (extension as { info?: unknown } | null)?.info;
    const checked = validatePaymentIdentifier({ info });
    if (!checked.valid) {
      return {
        kind: "invalid",
        reason: `the ${PAYMENT_IDENTIFIER} extension is malformed: ${(checked.errors ?? []).join("; ")}`,
      };
    }
    const id = extractPaymentIdentifier(payload);
    if (id === null) return { kind: "none" };
    const signed = canonicalJson({ accepted: payload.accepted, payload: payload.payload });
    return { kind: "identified", id, payment: createHash("sha256").update(signed).digest("base64url") };
  }

  receipt(response: SettleResponse): Header {
    // The SDK's encodePaymentResponseHeader: what the buyer sees, without extensionResponses.
    const { extensionResponses: _, ...buyerFacing } = response;
    return { name: PAYMENT_HEADERS.response.name, value: base64Json(buyerFacing) };
  }

  async verify(
    scheme: string,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ): Promise<VerifyResponse> {
    return (await this.ready(scheme, requirements.network)).verifyPayment(payload, requirements);
  }

  async settle(
    scheme: string,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ): Promise<SettleResponse> {
    return (await this.ready(scheme, requirements.network)).settlePayment(payload, requirements);
  }
}
