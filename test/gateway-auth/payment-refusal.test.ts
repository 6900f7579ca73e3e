// The gateway's reading of a refused payment during a rolling upgrade: payment-verifier of the last
// release fills only the deprecated `error_code` string, the new one the `PaymentError` enum too.
// Either way a client flooding payments gets its 429 and a refused payment its 402, not a 503.
import { describe, expect, it } from "vitest";
import { refusalOf } from "../../services/gateway/src/auth/payment.ts";

describe("refusalOf: the enum, or the deprecated string of an older payment-verifier", () => {
  it("reads the enum when payment-verifier sets it, whatever the string says", () => {
    expect(refusalOf({ error: "PAYMENT_ERROR_RATE_LIMITED", errorCode: "payment_invalid" })).toBe(
      "PAYMENT_ERROR_RATE_LIMITED",
    );
  });

  it("reads the string of an older payment-verifier as the enum value of the same name", () => {
    for (const code of [
      "payment_required",
      "payment_invalid",
      "service_unavailable",
      "rate_limited",
      "not_applicable",
    ])
      expect(refusalOf({ error: "PAYMENT_ERROR_UNSPECIFIED", errorCode: code })).toBe(
        `PAYMENT_ERROR_${code.toUpperCase()}`,
      );
  });

  it("leaves an unknown or empty string unspecified (the gateway then answers the refusal as invalid)", () => {
    expect(refusalOf({ error: "PAYMENT_ERROR_UNSPECIFIED", errorCode: "something_new" })).toBe(
      "PAYMENT_ERROR_UNSPECIFIED",
    );
    expect(refusalOf({ error: "PAYMENT_ERROR_UNSPECIFIED", errorCode: "" })).toBe(
      "PAYMENT_ERROR_UNSPECIFIED",
    );
  });
});
