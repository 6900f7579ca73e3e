import { ENDPOINTS, type Endpoint, type EndpointId, NETWORKS } from "@tollgate/catalog";
import request from "supertest";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { type ChainRequest, urlOf, validRequests } from "../support/devnet.ts";
import { get, mesh, metricSum, post } from "../support/gateway.ts";
import { assertConforms } from "../support/openapi.ts";
import { dayUsed, SUITE_BURST } from "../support/quota.ts";

// Bad input, parameter by parameter, for every endpoint: a 400 in the envelope that names
// the parameter and the format it expects, never a 500, never a node call, never a charge.

type Part = "path" | "query" | "body";
type Shape = Endpoint["params"]["query"];
type Schema = Endpoint["data"];
interface Format {
  /** What the message must say about the expected format. */
  expects: RegExp;
  bad: string[];
}

const ADDRESS: Format = {
  expects: /expected an address \(0x followed by 40 hex characters\)/,
  bad: [
    "0x123",
    `0x${"g".repeat(40)}`,
    "70997970C51812dc3A010C7d01b50e0d17dc79C8",
    `0x${"1".repeat(41)}`,
    "vitalik.eth",
  ],
};
const HASH: Format = {
  expects: /expected a 32-byte hash \(0x followed by 64 hex characters\)/,
  bad: ["0x12", `0x${"1".repeat(63)}`, `0x${"z".repeat(64)}`, "1".repeat(64)],
};
const BLOCK: Format = {
  expects: /expected a block selector: a decimal block number, a 0x hex block number, or one of latest/,
  bad: ["abc", "-1", "0x", "1.5", "0xg1", "LATEST", "1e3", " 1", "0x-1"],
};
const FORMATS: Record<string, Format> = {
  contract: ADDRESS,
  owner: ADDRESS,
  spender: ADDRESS,
  address: ADDRESS,
  to: ADDRESS,
  from: ADDRESS,
  topic: HASH,
  topic1: HASH,
  topic2: HASH,
  topic3: HASH,
  hash: HASH,
  number: BLOCK,
  block: BLOCK,
  from_block: BLOCK,
  to_block: BLOCK,
  token_id: {
    expects: /expected a token id \(decimal digits\)/,
    bad: ["abc", "1e3", "-1", "0x1", "1.0", " 1"],
  },
  max: {
    expects: /expected an integer from 1 to 1000/,
    bad: ["0", "1001", "abc", "-1", "1.5", "1e2", "0x10"],
  },
  network: { expects: /expected one of ethereum, sepolia/, bad: ["goerli", "Ethereum", "mainnet", "1"] },
  input: {
    expects: /expected an address \(reverse lookup\) or a valid ENS name ending in \.eth/,
    bad: ["vitalik", "..eth", "x_y.eth", "a b.eth", "0x123", "demo.com"],
  },
  data: {
    expects: /expected hex data \(0x followed by an even number of hex characters\)/,
    bad: ["0xabc", "abcd", "0xzz"],
  },
  value: {
    expects: /expected a hex quantity in wei \(0x followed by 1 to 64 hex digits\)/,
    bad: ["1000", "0x", `0x${"1".repeat(65)}`, "-0x1"],
  },
};
/** Values a format refuses for a reason other than its shape. */
const OUT_OF_RANGE: Record<string, [string, RegExp]> = {
  number: ["99999999999999999999", /block number is too large/],
  from_block: ["99999999999999999999", /block number is too large/],
  token_id: ["9".repeat(78), /token id exceeds uint256/],
};

interface BadCase {
  endpoint: Endpoint;
  name: string;
  req: ChainRequest;
  status: number;
  code: "invalid_parameter" | "unknown_parameter" | "invalid_body" | "unsupported_media_type";
  parameter: string;
  message: RegExp;
  /** Sent as the raw body instead of JSON-encoding req.body. */
  raw?: string;
  contentType?: string;
}

const shapes = (e: Endpoint): [Part, Shape][] =>
  (
    [
      ["path", e.params.path],
      ["query", e.params.query],
      ["body", e.params.body],
    ] as [Part, Shape | undefined][]
  ).filter((p): p is [Part, Shape] => p[1] !== undefined);

const isRequired = (field: unknown) => !(field as Schema).safeParse(undefined).success;
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `req` with one parameter replaced (or removed, for `undefined`). */
function withParam(req: ChainRequest, part: Part, name: string, value: unknown): ChainRequest {
  const copy: ChainRequest = {
    path: { ...req.path },
    query: { ...req.query },
    body: req.body === undefined ? undefined : { ...(req.body as object) },
  };
  const target = (part === "body" ? copy.body : copy[part]) as Record<string, unknown>;
  if (value === undefined) delete target[name];
  else target[name] = value;
  return copy;
}

/** The whole bad-input table of one endpoint, generated from its catalog shapes. */
function badCases(endpoint: Endpoint): BadCase[] {
  const good = validRequests("ethereum")[endpoint.id as EndpointId];
  const cases: BadCase[] = [];
  const add = (
    name: string,
    req: ChainRequest,
    parameter: string,
    message: RegExp,
    extra: Partial<BadCase> = {},
  ) =>
    cases.push({ endpoint, name, req, status: 400, code: "invalid_parameter", parameter, message, ...extra });

  for (const [part, schema] of shapes(endpoint)) {
    for (const [param, field] of Object.entries(schema.shape)) {
      const format = FORMATS[param];
      if (!format) throw new Error(`no bad values for ${endpoint.id}.${param}: add its format to FORMATS`);
      const label = part === "body" ? `body.${param}` : param;
      const expects =
        param === "network" && endpoint.networks.length > 2
          ? new RegExp(`expected one of ${endpoint.networks.join(", ")}`)
          : format.expects;
      const prefix = new RegExp(`^${escapeRe(label)}: ${expects.source}`);
      for (const value of format.bad)
        add(`${label}=${JSON.stringify(value)}`, withParam(good, part, param, value), label, prefix);
      // An empty value reaches the schema for query and body; an empty path segment is another route.
      if (part !== "path") add(`${label} empty`, withParam(good, part, param, ""), label, prefix);
      const range = OUT_OF_RANGE[param];
      if (range)
        add(
          `${label} out of range`,
          withParam(good, part, param, range[0]),
          label,
          new RegExp(`^${escapeRe(label)}: ${range[1].source}`),
        );
      if (part === "query") {
        const twice = withParam(good, part, param, ["1", "2"]);
        add(
          `${label} repeated`,
          twice,
          label,
          param === "network" ? prefix : new RegExp(`${prefix.source}.*, got several values$`),
        );
      }
      if (part === "body") {
        for (const [value, got] of [
          [1, "a number"],
          [null, "null"],
          [true, "a boolean"],
          [["0x"], "several values"],
          [{}, "an object"],
        ] as const) {
          add(
            `${label} as ${got}`,
            withParam(good, part, param, value),
            label,
            new RegExp(`${prefix.source}.*, got ${got}$`),
          );
        }
      }
      if (part !== "path" && isRequired(field)) {
        add(
          `${label} missing`,
          withParam(good, part, param, undefined),
          label,
          new RegExp(`^${escapeRe(label)}: required; ${expects.source}`),
        );
      }
    }
  }
  // The third network exists for network-info only.
  const third = NETWORKS.find((n) => n.scope === "network-info")!.name;
  if (!endpoint.networks.includes(third)) {
    add(
      "third network",
      withParam(good, "query", "network", third),
      "network",
      /^network: expected one of ethereum, sepolia$/,
    );
  }
  cases.push({
    endpoint,
    name: "unknown parameter",
    req: withParam(good, "query", "contracts", "0x1"),
    status: 400,
    code: "unknown_parameter",
    parameter: "contracts",
    message: /^contracts: unknown parameter$/,
  });
  if (endpoint.params.body) {
    const body = (raw: string, name: string, message: RegExp) =>
      cases.push({
        endpoint,
        name,
        req: good,
        raw,
        status: 400,
        code: "invalid_body",
        parameter: "body",
        message,
      });
    for (const raw of ["[]", '"text"', "1", "null", "true", "[{}]"]) {
      body(raw, `body ${raw}`, /^body: expected a JSON object$/);
    }
    body("{not json", "malformed body", /^body: malformed JSON$/);
    cases.push({
      endpoint,
      name: "unknown body field",
      req: withParam(good, "body", "gas", "0x1"),
      status: 400,
      code: "unknown_parameter",
      parameter: "body.gas",
      message: /^body\.gas: unknown body field$/,
    });
    cases.push({
      endpoint,
      name: "body not sent as JSON",
      req: good,
      raw: JSON.stringify(good.body),
      contentType: "text/plain",
      status: 415,
      code: "unsupported_media_type",
      parameter: "body",
      message: /^body: expected Content-Type: application\/json$/,
    });
  }
  return cases;
}

let apiKey: string;
const bearer = () => ({ Authorization: `Bearer ${apiKey}` });

async function send(c: BadCase): Promise<request.Response> {
  const url = urlOf(c.endpoint.path, c.req);
  if (c.endpoint.method === "GET") return get(url, bearer());
  if (c.contentType) {
    const res = await request(mesh.gatewayUrl)
      .post(url)
      .set({ ...bearer(), "Content-Type": c.contentType })
      .send(c.raw ?? "");
    await assertConforms("post", url, res);
    return res;
  }
  return post(url, c.raw ?? c.req.body, bearer());
}

function checkRefusal(c: BadCase, res: request.Response): void {
  const where = `${c.endpoint.id} ${c.name}: ${JSON.stringify(res.body)}`;
  expect(res.status, where).toBe(c.status);
  expect(res.body, where).toEqual({
    data: null,
    error: { code: c.code, parameter: c.parameter, message: expect.stringMatching(c.message) },
    meta: { endpoint: c.endpoint.path, request_id: expect.any(String) },
  });
  // Refused before the key was looked at: nothing counted.
  expect(res.headers["x-quota-day-used"], where).toBeUndefined();
  expect(res.headers["x-quota-month-used"], where).toBeUndefined();
}

const executes = () =>
  metricSum("rpc-proxy", "grpc_server_handling_seconds_count", { grpc_method: "Execute" });

/**
 * Runs `batch` and requires rpc-proxy's Execute count not to move meanwhile. Other test
 * files share the mesh, so a window with their traffic in it is run again: a batch that
 * reached rpc-proxy moves the count on every attempt and still fails.
 */
async function withoutExecute(label: string, batch: () => Promise<void>): Promise<void> {
  let moved = 0;
  for (let attempt = 0; attempt < 15; attempt++) {
    const before = await executes();
    await batch();
    moved = (await executes()) - before;
    if (moved === 0) return;
    // time-based: paces the retries with jitter, so another suite's traffic falls between them.
    await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
  }
  throw new Error(`${label}: rpc-proxy Execute moved by ${moved} in every attempt`);
}

const TABLE = ENDPOINTS.map((e) => [e.id, badCases(e)] as const);

beforeAll(async () => {
  ({ apiKey } = await createAccountWithKey({ burst: SUITE_BURST }));
});

describe("bad input is a 400 naming the parameter and its format, before any node call or charge", () => {
  let usedBefore: number;
  beforeAll(async () => {
    usedBefore = await dayUsed(apiKey);
  });

  it("has bad values for every parameter the catalog declares", () => {
    const declared = ENDPOINTS.flatMap((e) => shapes(e).flatMap(([, s]) => Object.keys(s.shape)));
    for (const name of declared) expect(Object.keys(FORMATS)).toContain(name);
    // Each bad value really is refused by the catalog's own schema, each good request accepted.
    for (const e of ENDPOINTS) {
      for (const [, s] of shapes(e)) {
        for (const [name, field] of Object.entries(s.shape)) {
          for (const v of FORMATS[name]!.bad)
            expect((field as Schema).safeParse(v).success, `${name}=${v}`).toBe(false);
        }
      }
    }
    expect(TABLE.reduce((n, [, cases]) => n + cases.length, 0)).toBeGreaterThan(300);
  });

  it.each(TABLE)("%s: every bad parameter is refused without reaching rpc-proxy", async (id, cases) => {
    // Small windows, so a window another file's traffic spoiled is cheap to run again.
    for (let i = 0; i < cases.length; i += 10) {
      await withoutExecute(`${id} cases ${i}+`, async () => {
        for (const c of cases.slice(i, i + 10)) checkRefusal(c, await send(c));
      });
    }
  });

  it("a malformed percent-encoding in the path is refused naming the path parameter and the template", async () => {
    await withoutExecute("path encoding", async () => {
      for (const [path, endpoint, parameter] of [
        ["/api/chain/code/%E0%A4%A", "/api/chain/code/{address}", "address"],
        ["/api/chain/block/%ZZ", "/api/chain/block/{number}", "number"],
        ["/api/chain/ens/%C3%28.eth", "/api/chain/ens/{input}", "input"],
      ] as const) {
        const res = await get(path, bearer());
        expect(res.status, path).toBe(400);
        expect(res.body).toEqual({
          data: null,
          error: {
            code: "invalid_parameter",
            parameter,
            message: `${parameter}: malformed percent-encoding in the URL path`,
          },
          meta: { endpoint, request_id: res.headers["x-request-id"] },
        });
        expect(res.headers["x-quota-day-used"]).toBeUndefined();
      }
    });
  });

  it("inverted log ranges are refused at the gateway as from_block", async () => {
    for (const id of ["events", "erc20Transfers"] as const) {
      const endpoint = ENDPOINTS.find((e) => e.id === id)!;
      for (const [from, to] of [
        ["10", "5"],
        ["0x10", "0x5"],
        ["1", "earliest"],
      ] as const) {
        const c: BadCase = {
          endpoint,
          name: `from ${from} to ${to}`,
          req: { query: { from_block: from, to_block: to } },
          status: 400,
          code: "invalid_parameter",
          parameter: "from_block",
          message: /^from_block: must not be after to_block$/,
        };
        await withoutExecute(c.name, async () => checkRefusal(c, await send(c)));
      }
    }
  });

  it("nothing was counted against the key: the next call uses exactly one more unit", async () => {
    expect(await dayUsed(apiKey)).toBe(usedBefore + 1);
  });
});

describe("no bad input yields a 5xx", () => {
  const nasty: unknown[] = [
    "",
    " ",
    "%00",
    "\u0000",
    "∞",
    "🦊.eth",
    "__proto__",
    "constructor",
    "0x",
    `0x${"f".repeat(5000)}`,
    "9".repeat(500),
    "-0",
    "NaN",
    "Infinity",
    "null",
    "undefined",
    "[object Object]",
  ];
  it.each(ENDPOINTS.map((e) => [e.id, e] as const))("%s", async (_id, endpoint) => {
    const good = validRequests("ethereum")[endpoint.id as EndpointId];
    for (const [part, schema] of shapes(endpoint)) {
      for (const param of Object.keys(schema.shape)) {
        const values = part === "body" ? [...nasty, 0, -1, 1e308, false, [], [[]], { a: 1 }] : nasty;
        for (const value of values) {
          if (part === "path" && (value === "" || value === " ")) continue;
          const req = withParam(good, part, param, value);
          const url = urlOf(endpoint.path, req);
          const res =
            endpoint.method === "GET" ? await get(url, bearer()) : await post(url, req.body, bearer());
          expect(
            res.status,
            `${endpoint.id} ${param}=${JSON.stringify(value)}: ${JSON.stringify(res.body)}`,
          ).toBeLessThan(500);
        }
      }
    }
    for (const key of ["__proto__", "constructor", "toString", "hasOwnProperty", "a[b]", "network[0]"]) {
      const url = `${urlOf(endpoint.path, good)}&${encodeURIComponent(key)}=1`;
      const res = endpoint.method === "GET" ? await get(url, bearer()) : await post(url, good.body, bearer());
      expect(res.status, `${endpoint.id} ?${key}`).toBe(400);
      expect(res.body.error.code).toBe("unknown_parameter");
    }
  });
});
