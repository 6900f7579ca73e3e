// The JSON Schema and response pieces every part of the OpenAPI document is built from: request
// schemas come from the catalog's zod schemas (its jsonSchema), so the document cannot drift from
// validation.
import { ERRORS, type Json, jsonSchema } from "@tollgate/catalog";
import type { z } from "zod";

export function parameters(schema: z.ZodObject | undefined, where: "path" | "query"): Json[] {
  if (!schema) return [];
  return Object.entries(schema.shape).map(([name, field]) => {
    const s = jsonSchema(field as z.ZodType, "input");
    const description = typeof s.description === "string" ? s.description : undefined;
    return {
      name,
      in: where,
      required: where === "path" || !(field as z.ZodType).safeParse(undefined).success,
      ...(description ? { description } : {}),
      schema: s,
    };
  });
}

export const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

export function errorResponse(description: string): Json {
  return {
    description,
    content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
  };
}

/**
 * The HTTP parser and the JSON body parser run before routing, so any request, free or paid, can
 * meet their limits: a malformed request, timeouts, header size, body size and media types.
 */
export const BEFORE_ROUTING = [
  "malformed_request",
  "request_timeout",
  "payload_too_large",
  "unsupported_media_type",
  "headers_too_large",
] as const;

/** The refusals of BEFORE_ROUTING, for operations that document no other error at their status. */
export const beforeRouting = (): Json =>
  Object.fromEntries(
    BEFORE_ROUTING.map((code) => [
      String(ERRORS[code].status),
      errorResponse(`\`${code}\`: ${ERRORS[code].description}`),
    ]),
  );

export const envelopeOf = (data: Json): Json => ({
  type: "object",
  required: ["data", "error", "meta"],
  properties: { data, error: { type: "null" }, meta: { $ref: "#/components/schemas/Meta" } },
});
