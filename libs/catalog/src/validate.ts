import { type ParsedUrlQuery, parse } from "node:querystring";
import type { z } from "zod";
import type { Endpoint } from "./endpoints.ts";

export interface ValidationFailure {
  ok: false;
  code: "invalid_parameter" | "unknown_parameter" | "invalid_body";
  /** The offending parameter, e.g. "contract" or "body.to". */
  parameter: string;
  message: string;
}

export interface ValidationSuccess {
  ok: true;
  /** Path, query and body parameters merged into one object for the operation. */
  params: Record<string, unknown>;
}

type Part = "path" | "query" | "body";

/** The format message a field's schema gives for a wrong string, e.g. "expected an address (…)". */
function formatOf(schema: z.ZodObject, field: string): string | undefined {
  const issue = (schema.shape[field] as z.ZodType | undefined)?.safeParse("").error?.issues[0];
  return issue && issue.code !== "invalid_type" ? issue.message : undefined;
}

function received(value: unknown): string {
  if (Array.isArray(value)) return "several values";
  if (value === null) return "null";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function describe(
  part: Part,
  schema: z.ZodObject,
  input: unknown,
  issue: z.core.$ZodIssue,
): ValidationFailure {
  const prefix = part === "body" ? "body." : "";
  if (issue.code === "unrecognized_keys") {
    const name = `${prefix}${issue.keys[0]}`;
    return {
      ok: false,
      code: "unknown_parameter",
      parameter: name,
      message: `${name}: unknown ${part === "body" ? "body field" : "parameter"}`,
    };
  }
  const field = issue.path[0];
  if (field === undefined) {
    return { ok: false, code: "invalid_body", parameter: "body", message: "body: expected a JSON object" };
  }
  const name = `${prefix}${String(field)}`;
  const value = (input as Record<string, unknown>)[String(field)];
  // Type errors (a missing value, a repeated query parameter, a JSON number) still name the format.
  const format =
    issue.code === "invalid_type" ? (formatOf(schema, String(field)) ?? "expected a string") : "";
  let detail = issue.message;
  if (issue.code === "invalid_type" && value === undefined) detail = `required; ${format}`;
  else if (issue.code === "invalid_type") detail = `${format}, got ${received(value)}`;
  return { ok: false, code: "invalid_parameter", parameter: name, message: `${name}: ${detail}` };
}

/**
 * Validates a request against its endpoint description. Runs before any
 * authentication or payment, so bad input is never charged and never reaches a node.
 */
export function validateRequest(
  endpoint: Endpoint,
  input: { path: Record<string, unknown>; query: Record<string, unknown>; body: unknown },
): ValidationSuccess | ValidationFailure {
  const params: Record<string, unknown> = {};
  const parts: [Part, z.ZodObject | undefined, unknown][] = [
    ["path", endpoint.params.path, input.path],
    ["query", endpoint.params.query, input.query],
    ["body", endpoint.params.body, input.body],
  ];
  for (const [part, schema, value] of parts) {
    if (!schema) continue;
    if (part === "body" && (value === null || typeof value !== "object" || Array.isArray(value))) {
      return { ok: false, code: "invalid_body", parameter: "body", message: "body: expected a JSON object" };
    }
    const result = schema.safeParse(value ?? {});
    if (!result.success) {
      const issue = result.error.issues[0];
      if (issue) return describe(part, schema, value ?? {}, issue);
    } else {
      Object.assign(params, result.data);
    }
  }
  return { ok: true, params };
}

/**
 * The services' query parser: node:querystring (Express's "simple") without its 1,000-pair cap,
 * past which the rest is silently dropped (`?&&…&network=sepolia` served on the default network).
 * The 16 KB header limit bounds the work; every parameter reaches validation (unknown, repeated or
 * malformed: a 400 naming it).
 */
export function parseQueryString(search: string): ParsedUrlQuery {
  return parse(search, "&", "=", { maxKeys: 0 });
}
