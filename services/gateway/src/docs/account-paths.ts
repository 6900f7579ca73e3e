// The dashboard's JSON API in the OpenAPI document (it is served by the dashboard, not here).
import {
  ACCOUNT_API,
  ACCOUNT_ERRORS,
  type AccountOperation,
  CSRF_HEADER,
  type Json,
  jsonSchema,
} from "@tollgate/catalog";
import { parameters } from "./schema.ts";

/**
 * The dashboard's JSON API, from the one description in the catalog (the dashboard validates with
 * the same schemas). It is served by the dashboard, so each path names that server.
 */
function accountOperation(op: AccountOperation): Json {
  const codes = [...op.errors] as (keyof typeof ACCOUNT_ERRORS)[];
  const statuses = [...new Set(codes.map((c) => ACCOUNT_ERRORS[c].status))].sort();
  const params = [
    ...parameters(op.params, "path"),
    ...parameters(op.query, "query"),
    ...(op.session && op.method === "POST"
      ? [
          {
            name: CSRF_HEADER,
            in: "header",
            required: true,
            description: "The session's CSRF token (from sign-in or GET session).",
            schema: { type: "string" },
          },
        ]
      : []),
  ];
  return {
    operationId: op.id,
    summary: op.summary,
    description: op.description,
    tags: ["account"],
    security: op.session ? [{ dashboardSession: [] }] : [],
    ...(params.length ? { parameters: params } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: jsonSchema(op.body, "input") } },
          },
        }
      : {}),
    responses: {
      "200": {
        description: "OK",
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["data"],
              properties: { data: jsonSchema(op.data, "output") },
            },
          },
        },
      },
      ...Object.fromEntries(
        statuses.map((status) => [
          String(status),
          {
            description: codes
              .filter((c) => ACCOUNT_ERRORS[c].status === status)
              .map((c) => `\`${c}\`: ${ACCOUNT_ERRORS[c].description}`)
              .join(" "),
            content: { "application/json": { schema: { $ref: "#/components/schemas/AccountError" } } },
          },
        ]),
      ),
    },
  };
}

export function accountPaths(dashboardUrl: string | undefined): Json {
  const servers = [
    dashboardUrl
      ? { url: dashboardUrl, description: "The account dashboard" }
      : {
          url: "{dashboard}",
          description: "The account dashboard (its own origin)",
          variables: { dashboard: { default: "http://127.0.0.1:8090" } },
        },
  ];
  const paths: Record<string, Json> = {};
  for (const op of Object.values(ACCOUNT_API) as AccountOperation[]) {
    paths[op.path] ??= { servers };
    (paths[op.path] as Json)[op.method.toLowerCase()] = accountOperation(op);
  }
  return paths;
}
