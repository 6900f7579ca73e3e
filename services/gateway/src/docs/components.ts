// The OpenAPI document's components: security schemes, the headers and the shared schemas (the
// envelope, the payment refusal, the dashboard's error, the flat limit error).
import {
  AccountError,
  CREDIT_HEADERS,
  ERRORS,
  type Json,
  jsonSchema,
  LIMIT_ERRORS,
  META_SCHEMA,
  PAYMENT_HEADERS,
  QUOTA_HEADERS,
  SESSION_COOKIE,
} from "@tollgate/catalog";

const { required: PAYMENT_REQUIRED, response: PAYMENT_RESPONSE } = PAYMENT_HEADERS;

/** `components`, with the security schemes the accepted payment methods add (PayDocs.schemes). */
export function components(schemes: Json): Json {
  return {
    securitySchemes: {
      ...schemes,
      dashboardSession: {
        type: "apiKey",
        in: "cookie",
        name: SESSION_COOKIE,
        description: "The dashboard's session (HttpOnly, SameSite=Strict), set by sign-in.",
      },
    },
    headers: Object.fromEntries([
      ...Object.values(QUOTA_HEADERS).map((h) => [
        h.name,
        { description: h.description, schema: { type: "integer" } },
      ]),
      [
        CREDIT_HEADERS.remaining.name,
        { description: CREDIT_HEADERS.remaining.description, schema: { type: "string", example: "4.997" } },
      ],
      ...[PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_HEADERS.mppChallenge, PAYMENT_HEADERS.mppReceipt].map(
        (h) => [h.name, { description: h.description, schema: { type: "string" } }],
      ),
    ]),
    schemas: {
      Meta: META_SCHEMA,
      ErrorEnvelope: {
        type: "object",
        required: ["data", "error", "meta"],
        properties: {
          data: { type: "null" },
          error: {
            type: "object",
            required: ["code", "message"],
            properties: {
              code: { type: "string", enum: Object.keys(ERRORS) },
              message: { type: "string" },
              parameter: { type: "string", description: "The offending parameter, on 400s." },
              revert_data: { type: "string", description: "execution_reverted: raw revert data." },
              reason: { type: "string", description: "execution_reverted: decoded reason." },
              reason_code: {
                type: "string",
                description:
                  "sign_in_invalid: the sign-in-with-x extension's failure code (for example invalid_siwx_nonce for a proof used already, invalid_siwx_domain_mismatch, invalid_siwx_expired).",
              },
            },
          },
          meta: { $ref: "#/components/schemas/Meta" },
        },
      },
      PaymentRefusal: {
        description:
          "The error envelope; when a payment protocol defines a problem for the refusal (MPP), its RFC 9457 members (type, title, status, detail) are added at the top level.",
        allOf: [{ $ref: "#/components/schemas/ErrorEnvelope" }],
        properties: {
          type: {
            type: "string",
            format: "uri",
            description: "e.g. https://paymentauth.org/problems/payment-required",
          },
          title: { type: "string" },
          status: { type: "integer" },
          detail: { type: "string" },
        },
      },
      AccountError: jsonSchema(AccountError, "output"),
      LimitError: {
        type: "object",
        required: ["error", "message"],
        properties: {
          error: { type: "string", enum: Object.keys(LIMIT_ERRORS) },
          message: { type: "string" },
          request_id: { type: "string" },
        },
      },
    },
  };
}
