// The catalog's zod schemas as JSON Schema (draft 2020-12), the one conversion every published
// description uses: the gateway's OpenAPI document and the x402 `bazaar` declaration of each 402.
import { z } from "zod";

export type Json = Record<string, unknown>;

export function jsonSchema(schema: z.ZodType, io: "input" | "output"): Json {
  const out = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
  delete out.$schema;
  return out;
}

/** The envelope's `meta`, as every answer carries it (the OpenAPI document's `Meta`). */
export const META_SCHEMA: Json = {
  type: "object",
  required: ["endpoint", "request_id"],
  properties: {
    endpoint: { type: "string", description: "Path template served." },
    request_id: { type: "string" },
    cost_usdc: { type: "string", description: "Paid calls: decimal price charged." },
    payment_chain: { type: "string", description: "Paid calls: settlement chain (CAIP-2)." },
    payment_token: { type: "string", description: "Paid calls: payment token address." },
  },
};
