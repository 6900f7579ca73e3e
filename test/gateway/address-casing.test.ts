import { ENDPOINTS, type Endpoint, type EndpointId } from "@tollgate/catalog";
import { getAddress } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { lower } from "../support/addresses.ts";
import { type ChainRequest, urlOf, validRequests } from "../support/devnet.ts";
import { get, post } from "../support/gateway.ts";
import { SUITE_BURST } from "../support/quota.ts";

// Spec 2.2: an address is any string matching ^0x[a-fA-F0-9]{40}$. Every casing of every
// address parameter (query, path, body; the ENS input too) is served as its lower-case
// form, and every answer echoes addresses lower-case.

let apiKey: string;

beforeAll(async () => {
  ({ apiKey } = await createAccountWithKey({ burst: SUITE_BURST }));
});

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The casings of one address: lower, upper, EIP-55, and mixed with a wrong checksum. */
function casings(address: string): string[] {
  const hex = address.slice(2).toLowerCase();
  const checksummed = getAddress(address);
  // Flip the case of the first letter: the checksum no longer holds.
  const i = checksummed.slice(2).search(/[a-fA-F]/) + 2;
  const c = checksummed[i]!;
  const wrong =
    checksummed.slice(0, i) +
    (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) +
    checksummed.slice(i + 1);
  return [`0x${hex}`, `0x${hex.toUpperCase()}`, checksummed, wrong];
}

/** Every address-valued parameter of a request, as [part, name]. */
function addressParams(req: ChainRequest): ["path" | "query" | "body", string][] {
  const out: ["path" | "query" | "body", string][] = [];
  for (const part of ["path", "query", "body"] as const) {
    const values = (part === "body" ? req.body : req[part]) as Record<string, unknown> | undefined;
    for (const [name, value] of Object.entries(values ?? {})) {
      if (typeof value === "string" && ADDRESS.test(value)) out.push([part, name]);
    }
  }
  return out;
}

function withValue(
  req: ChainRequest,
  part: "path" | "query" | "body",
  name: string,
  value: string,
): ChainRequest {
  const copy: ChainRequest = {
    path: { ...req.path },
    query: { ...req.query },
    body: req.body && { ...(req.body as object) },
  };
  ((part === "body" ? copy.body : copy[part]) as Record<string, unknown>)[name] = value;
  return copy;
}

async function send(id: EndpointId, req: ChainRequest) {
  const endpoint = ENDPOINTS.find((e) => e.id === id)!;
  const url = urlOf(endpoint.path, req);
  const auth = { Authorization: `Bearer ${apiKey}` };
  return endpoint.method === "GET" ? get(url, auth) : post(url, req.body, auth);
}

/** Every string in an answer that is an address, wherever it sits. */
function addressesIn(value: unknown): string[] {
  if (typeof value === "string") return ADDRESS.test(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(addressesIn);
  if (value && typeof value === "object") return Object.values(value).flatMap(addressesIn);
  return [];
}

describe("every casing of an address is valid input, served as its lower-case form", () => {
  const requests = validRequests("ethereum");
  // The ENS input as an address too: the reverse lookup.
  const cases: [EndpointId, ChainRequest][] = [
    ...(Object.entries(requests) as [EndpointId, ChainRequest][]),
    ["ens", { ...requests.ens, path: { input: requests.allowance.query!.owner as string } }],
    // The call's optional caller.
    [
      "call",
      {
        ...requests.call,
        body: { ...(requests.call.body as object), from: requests.allowance.query!.owner },
      },
    ],
  ];
  const covered = new Set<string>();

  it.each(cases.filter(([, req]) => addressParams(req).length > 0))(
    "%s: lower, upper, checksummed and wrong-checksum casings give the same answer, addresses lower-case",
    async (id, req) => {
      const reference = await send(id, req);
      expect(reference.status, JSON.stringify(reference.body)).toBe(200);
      for (const value of addressesIn(reference.body.data)) expect(value).toBe(value.toLowerCase());
      for (const [part, name] of addressParams(req)) {
        covered.add(`${id}.${name}`);
        const value = (part === "body" ? (req.body as Record<string, string>) : req[part]!)[name] as string;
        for (const casing of casings(value)) {
          const res = await send(id, withValue(req, part, name, casing));
          expect(res.status, `${id} ${name}=${casing}: ${JSON.stringify(res.body)}`).toBe(200);
          expect(res.body.data).toEqual(reference.body.data);
        }
      }
    },
  );

  it("covered every address parameter the catalog declares", () => {
    // The ENS input takes an address as one of its two forms.
    const declared = ENDPOINTS.flatMap((e: Endpoint) =>
      [e.params.path, e.params.query, e.params.body].flatMap((s) =>
        Object.keys(s?.shape ?? {})
          .filter((name) => ["contract", "owner", "spender", "address", "to", "from", "input"].includes(name))
          .map((name) => `${e.id}.${name}`),
      ),
    );
    expect([...covered].sort()).toEqual([...new Set(declared)].sort());
  });

  it("echoes the lower-case form in the fields that repeat an input", async () => {
    const req = requests.erc20Balance;
    const upper = withValue(
      withValue(req, "query", "address", `0x${(req.query!.address as string).slice(2).toUpperCase()}`),
      "query",
      "contract",
      `0x${(req.query!.contract as string).slice(2).toUpperCase()}`,
    );
    const res = await send("erc20Balance", upper);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject(lower({ account: req.query!.address, token: req.query!.contract }));
  });
});
