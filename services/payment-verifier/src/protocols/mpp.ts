// MPP (the Machine Payments Protocol, HTTP `Payment` authentication), once for every MPP scheme,
// on the official mppx server: one Mppx instance that every MPP scheme registers its method on
// (tempo.charge, tempo.session), holding the secret every challenge id is an HMAC under (the same
// on every replica, so any replica checks any challenge without state).
//
// In: `Authorization: Payment <credential>` (mppx's default credential header). Out: one
// `WWW-Authenticate: Payment …` value per offer (the gateway appends them, never overwrites), and
// `Payment-Receipt` on success. Refusals carry the protocol's RFC 9457 problem (types under
// https://paymentauth.org/problems/), which the gateway adds to its 402 envelope.
//
// The split the gateway needs: `validate` (mppx.validateCredential: HMAC, expiry, the route's
// amount/currency/recipient/chain, the payment itself — nothing written, nothing broadcast) before
// the upstream call, `broadcast` (mppx.broadcastCredential: re-validates, then collects) after it.
// Both always get `request` = this call's offer, so a credential for another route never passes.
import { PAYMENT_HEADERS, priceAtomic } from "@tollgate/catalog";
import { Challenge, Credential, Errors, Receipt } from "mppx";
import { Mppx } from "mppx/server";
import {
  BaseError,
  HttpRequestError,
  TimeoutError,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
} from "viem";
import {
  findHeader,
  type Header,
  type PaymentErrorCode,
  type PaymentProtocol,
  type PricedCall,
  type Problem,
  type Verdict,
} from "../core/types.ts";

/** The payment method both MPP schemes use (Tempo TIP-20 stablecoins). */
export const MPP_METHOD = "tempo";

/** Far above any real credential (a session open with its transaction is a few KB). */
const MAX_CREDENTIAL_CHARS = 16_384;

export type MppCredential = Credential.Credential;

/** The fields of a credential's challenge request every MPP offer binds (atomic amount). */
export interface OfferedRequest {
  amount: string;
  currency: string;
  recipient?: string | undefined;
  methodDetails?: { chainId?: number | undefined } | undefined;
}

/** One MPP offer: an intent and the route request mppx is given (human units, like compose()). */
export interface MppOffer {
  intent: "charge" | "session";
  request: Record<string, unknown>;
}

/** What the request looked like, for session accounting (a served call is a content request). */
export type CapturedRequest = { method: string; url: URL; headers: Headers; hasBody: boolean };

type MppxMethod = Parameters<typeof Mppx.create>[0]["methods"][number];

/** The slice of mppx's server this protocol uses (its generic types are not needed here). */
interface MppxServer {
  challenge: Record<
    string,
    Record<string, (options: Record<string, unknown>) => Promise<Challenge.Challenge>>
  >;
  validateCredential(
    credential: MppCredential,
    options: { request: Record<string, unknown>; capturedRequest?: CapturedRequest },
  ): Promise<unknown>;
  broadcastCredential(
    credential: MppCredential,
    options: { request: Record<string, unknown>; capturedRequest?: CapturedRequest },
  ): Promise<Receipt.Receipt>;
}

/** A refusal as the core wants it: a code, a reason for the client, the protocol's problem. */
export interface MppRefusal {
  code: PaymentErrorCode;
  reason: string;
  problem: Problem;
  /** The same credential can never pass (a forged challenge, a wrong amount): remembered briefly. */
  final?: boolean;
}

function problemOf(error: Errors.PaymentError): Problem {
  const details = error.toProblemDetails();
  return { type: details.type, title: details.title, detail: details.detail };
}

export class MppProtocol implements PaymentProtocol<MppCredential, MppOffer> {
  readonly name = "mpp";
  readonly #methods: MppxMethod[] = [];
  readonly #secretKey: string;
  readonly #realm: string;
  #server: MppxServer | undefined;

  constructor(opts: { secretKey: string; realm: string }) {
    this.#secretKey = opts.secretKey;
    this.#realm = opts.realm;
  }

  get realm(): string {
    return this.#realm;
  }

  /** A scheme registers its mppx method before the first use (Mppx.create needs them all at once). */
  register(method: MppxMethod): void {
    if (this.#server) throw new Error("MPP methods must be registered before the first payment");
    this.#methods.push(method);
  }

  get #mppx(): MppxServer {
    this.#server ??= Mppx.create({
      methods: this.#methods,
      secretKey: this.#secretKey,
      realm: this.#realm,
    }) as unknown as MppxServer;
    return this.#server;
  }

  decode(credentials: readonly Header[]) {
    const header = findHeader(credentials, "authorization");
    const token = header ? Credential.extractPaymentScheme(header.value.trim()) : null;
    if (!header || token === null) return { kind: "absent" as const };
    const invalid = (reason: string) => ({ kind: "invalid" as const, reason });
    if (header.value.length > MAX_CREDENTIAL_CHARS) return invalid("Authorization: Payment is too large");
    let credential: MppCredential;
    try {
      credential = Credential.deserialize(token);
    } catch (err) {
      const why = err instanceof Error ? err.message.split("\n")[0] : "undecodable";
      return invalid(
        `Authorization: Payment is not an MPP credential (base64url JSON {challenge, payload, source}): ${why}`,
      );
    }
    return { kind: "credential" as const, credential };
  }

  /** One WWW-Authenticate value per offer; each challenge id is an HMAC under the shared secret. */
  async render(call: PricedCall, offers: readonly MppOffer[]): Promise<Header[]> {
    const mppx = this.#mppx;
    const challenges = await Promise.all(
      offers.map((offer) => {
        const create = mppx.challenge[MPP_METHOD]?.[offer.intent];
        if (!create) throw new Error(`no MPP method registered for ${MPP_METHOD}/${offer.intent}`);
        return create({ ...offer.request, description: call.endpoint.summary });
      }),
    );
    return challenges.map((c) => ({
      name: PAYMENT_HEADERS.mppChallenge.name,
      value: Challenge.serialize(c),
    }));
  }

  /**
   * Checks a credential against this call's offer without writing or broadcasting anything, as the
   * core's verdict.
   */
  async validate(credential: MppCredential, offer: MppOffer): Promise<Verdict> {
    try {
      await this.#mppx.validateCredential(credential, { request: offer.request });
      return { ok: true };
    } catch (err) {
      return { ok: false, ...this.refusalOf(err, "verified") };
    }
  }

  /** Re-validates and collects (broadcast, claim, voucher accepted and charged): the receipt. */
  broadcast(
    credential: MppCredential,
    offer: MppOffer,
    capturedRequest?: CapturedRequest,
  ): Promise<Receipt.Receipt> {
    return this.#mppx.broadcastCredential(credential, {
      request: offer.request,
      ...(capturedRequest ? { capturedRequest } : {}),
    });
  }

  receipt(receipt: Receipt.Receipt): Header {
    return { name: PAYMENT_HEADERS.mppReceipt.name, value: Receipt.serialize(receipt) };
  }

  /** The problem for refusals the core makes itself. */
  problem(code: PaymentErrorCode, reason: string): Problem | undefined {
    if (code === "payment_required")
      return { ...problemOf(new Errors.PaymentRequiredError()), detail: reason };
    if (code === "payment_invalid")
      return { ...problemOf(new Errors.VerificationFailedError()), detail: reason };
    return undefined;
  }

  /**
   * A refusal of our own, stated as MPP states it. Not final by default: a credential refused for
   * this call (a price or a route that differs) may still be good for the call it was made for.
   */
  refuse(reason: string, kind: "challenge" | "expired" | "verification", final = false): MppRefusal {
    const error =
      kind === "challenge"
        ? new Errors.InvalidChallengeError({ reason })
        : kind === "expired"
          ? new Errors.PaymentExpiredError()
          : new Errors.VerificationFailedError({ reason });
    return { code: "payment_invalid", reason, problem: { ...problemOf(error), detail: reason }, final };
  }

  /**
   * The checks every MPP offer shares, against THIS call's: chain, receiver, exact price, realm,
   * expiry. Each refusal names what differs (mppx itself would only say "does not match").
   */
  refuseForCall(
    call: PricedCall,
    credential: MppCredential,
    request: OfferedRequest,
    expected: { chainId: number; payTo: string; symbol: string },
  ): MppRefusal | undefined {
    const chain = request.methodDetails?.chainId;
    if (chain !== expected.chainId) {
      return this.refuse(
        `the credential is for chain ${chain ?? "(none)"}; this API is paid on Tempo chain ${expected.chainId}`,
        "challenge",
      );
    }
    if (request.recipient?.toLowerCase() !== expected.payTo.toLowerCase()) {
      return this.refuse(
        `the credential pays ${request.recipient ?? "(nobody)"}; this API's recipient is ${expected.payTo}`,
        "challenge",
      );
    }
    const price = priceAtomic(call.endpoint.price);
    if (BigInt(request.amount) !== price) {
      return this.refuse(
        `the credential pays ${request.amount} atomic units of ${expected.symbol}, but ${call.endpoint.path} costs ${price} (${call.endpoint.price} USD): its challenge was issued for another endpoint`,
        "challenge",
      );
    }
    if (credential.challenge.realm !== this.#realm) {
      return this.refuse(
        `the credential's challenge is for realm "${credential.challenge.realm}", not "${this.#realm}"`,
        "challenge",
      );
    }
    if (!(Date.parse(credential.challenge.expires ?? "") > Date.now())) {
      return this.refuse(
        `the credential's challenge expired at ${credential.challenge.expires ?? "(no expiry)"}; take a fresh challenge from a 402 and pay again`,
        "expired",
      );
    }
    return undefined;
  }

  /**
   * What an mppx or chain error means for the client. mppx answers anything that is not one of its
   * payment errors (a simulation revert for a payer without funds, a node error) as a 500
   * internal-payment-error; here a payer's problem is a 402 that says what is wrong, and only an
   * unreachable chain is a 503.
   */
  refusalOf(err: unknown, what: string): MppRefusal {
    if (err instanceof Errors.PaymentError) {
      const problem = problemOf(err);
      const reason = problem.detail.split("\n")[0] ?? problem.title;
      // A challenge we did not issue stays forged for this credential: remembered briefly.
      const final = err instanceof Errors.InvalidChallengeError && /not issued by this server/.test(reason);
      return { code: "payment_invalid", reason, problem, final };
    }
    if (err instanceof BaseError) {
      const unreachable = err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError);
      if (unreachable) {
        return {
          code: "service_unavailable",
          reason: `MPP payments are unavailable: the Tempo chain did not answer (${what}); retry`,
          problem: problemOf(
            new Errors.VerificationFailedError({ reason: "the Tempo chain did not answer" }),
          ),
        };
      }
      if (
        err.walk((e) => e instanceof TransactionReceiptNotFoundError || e instanceof TransactionNotFoundError)
      ) {
        return this.refuse(
          "the payment's transaction is not on the Tempo chain (not mined, or unknown)",
          "verification",
          false,
        );
      }
      const short = err.shortMessage.split("\n")[0] ?? "";
      return this.refuse(
        `the payment transaction fails on the Tempo chain (${short}): check that the payer holds the token and enough of it`,
        "verification",
      );
    }
    return this.refuse(`the payment could not be ${what}`, "verification");
  }
}
