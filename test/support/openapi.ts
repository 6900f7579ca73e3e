import { Ajv2020 } from "ajv/dist/2020.js";
import type request from "supertest";
import { inject } from "vitest";

type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };

let loaded: Promise<{ ajv: Ajv2020; doc: Doc }> | undefined;

function load() {
  loaded ??= (async () => {
    const doc = (await (await fetch(`${inject("mesh").gatewayUrl}/openapi.json`)).json()) as Doc;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema(doc as object, "openapi.json");
    return { ajv, doc };
  })();
  return loaded;
}

const pointerEscape = (s: string) => s.replaceAll("~", "~0").replaceAll("/", "~1");

/** The path template of the document that serves a concrete path. */
function templateOf(doc: Doc, path: string): string | undefined {
  const bare = path.split("?")[0] ?? path;
  if (doc.paths[bare]) return bare;
  return Object.keys(doc.paths).find((t) => {
    const re = new RegExp(`^${t.replace(/\{[^}]+\}/g, "[^/]+")}$`);
    return re.test(bare);
  });
}

/** Fails when a JSON response does not match its schema in the gateway's /openapi.json. */
export async function assertConforms(method: string, path: string, res: request.Response): Promise<void> {
  if (!String(res.headers["content-type"] ?? "").includes("application/json")) return;
  const { ajv, doc } = await load();
  const template = templateOf(doc, path);
  if (!template) return; // unknown routes are checked by their own tests
  const op = doc.paths[template]?.[method];
  if (!op) return;
  const status = String(res.status);
  if (!op.responses[status]) {
    throw new Error(
      `${method.toUpperCase()} ${template} answered ${status}, which /openapi.json does not document`,
    );
  }
  const pointer = `openapi.json#/paths/${pointerEscape(template)}/${method}/responses/${status}/content/application~1json/schema`;
  const validate = ajv.getSchema(pointer);
  if (!validate) throw new Error(`no schema at ${pointer}`);
  if (!validate(res.body)) {
    throw new Error(
      `${method.toUpperCase()} ${path} → ${status} does not match /openapi.json: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(res.body).slice(0, 500)}`,
    );
  }
}
