import { BLOCK_TAGS, ENDPOINTS, type Endpoint, type EndpointId, validateRequest } from "@tollgate/catalog";
import fc from "fast-check";
import { getAddress } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { A, B, type ChainRequest, devnet, TRANSFER_TOPIC, urlOf } from "../support/devnet.ts";
import { get, post } from "../support/gateway.ts";
import { SUITE_BURST } from "../support/quota.ts";

// Property: any VALID request (every value drawn from the catalog's own formats, spec 2.2)
// sent through the real mesh gets an answer that is not a 5xx and that validates against
// /openapi.json (get/post check it), with every address in it lower-case.

const RUNS_PER_ENDPOINT = Number(process.env.PROPERTY_RUNS ?? 20);
let apiKey: string;

beforeAll(async () => {
  ({ apiKey } = await createAccountWithKey({ burst: SUITE_BURST }));
});

const demo = devnet.demo.ethereum;
const KNOWN = [A, B, demo.erc20.address, demo.erc721.address, demo.erc1155.address, demo.reverter.address];

const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
/** Every casing spec 2.2 allows: lower, upper, EIP-55, and any mix (a wrong checksum included). */
const casing = (hex40: string) =>
  fc.oneof(
    fc.constant(`0x${hex40.toLowerCase()}`),
    fc.constant(`0x${hex40.toUpperCase()}`),
    fc.constant(getAddress(`0x${hex40.toLowerCase()}`)),
    fc
      .array(fc.boolean(), { minLength: 40, maxLength: 40 })
      .map(
        (upper) => `0x${[...hex40].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join("")}`,
      ),
  );
const address = fc
  .oneof(
    fc.constantFrom(...KNOWN.map((a) => a.slice(2))),
    fc.uint8Array({ minLength: 20, maxLength: 20 }).map(hexOf),
  )
  .chain(casing);

const MAX_BLOCK = 2n ** 63n - 1n;
const blockNumber = fc.oneof(fc.bigInt(0n, 64n), fc.bigInt(0n, MAX_BLOCK));
/** Block selector: decimal, hex in any digit case (leading zeros too), or a tag. */
const blockSelector = fc.oneof(
  blockNumber.map((n) => n.toString()),
  fc.tuple(blockNumber, fc.boolean(), fc.nat(3)).map(([n, upper, zeros]) => {
    const digits = "0".repeat(zeros) + n.toString(16);
    return `0x${(upper ? digits.toUpperCase() : digits).slice(-16)}`;
  }),
  fc.constantFrom(...BLOCK_TAGS),
);
const hash32 = fc.oneof(
  fc.constant(TRANSFER_TOPIC),
  fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0x${hexOf(b)}`),
);
const tokenId = fc.oneof(fc.bigInt(0n, 10n), fc.bigInt(0n, 2n ** 256n - 1n)).map(String);
const max = fc.integer({ min: 1, max: 1000 }).map(String);
// ENSIP-15 refuses "--" in a label's third and fourth characters (punycode's "xn--").
const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/).filter((l) => l.slice(2, 4) !== "--");
const ensName = fc.oneof(
  fc.constantFrom(...demo.ens.names.map((n) => n.name), demo.ens.unknownName),
  fc.array(label, { minLength: 1, maxLength: 3 }).map((labels) => `${labels.join(".")}.eth`),
  label.map((l) => `${l.toUpperCase()}.ETH`),
);
const hexData = fc.uint8Array({ maxLength: 68 }).map((b) => `0x${hexOf(b)}`);
const weiHex = fc
  .oneof(fc.bigInt(0n, 10n ** 18n), fc.bigInt(0n, 2n ** 256n - 1n))
  .map((n) => `0x${n.toString(16)}`);

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
/** The defined entries only (optional parameters left out). */
const defined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, string>;
const record = (shape: Record<string, fc.Arbitrary<unknown>>) => fc.record(shape).map(defined);

/** A log range's bounds: both optional; two numbers in order (the catalog refuses from after to). */
const numberOf = (s: string | undefined) =>
  s === undefined || !/^(0x)?[0-9a-fA-F]+$/.test(s) ? undefined : BigInt(s);
const logRange = fc
  .record({ from_block: optional(blockSelector), to_block: optional(blockSelector) })
  .filter(({ from_block, to_block }) => {
    const from = from_block === "earliest" ? 0n : numberOf(from_block);
    const to = to_block === "earliest" ? 0n : numberOf(to_block);
    return from === undefined || to === undefined || from <= to;
  });

function requestsFor(endpoint: Endpoint): fc.Arbitrary<ChainRequest> {
  const network = fc.constantFrom(...endpoint.networks);
  const query = (shape: Record<string, fc.Arbitrary<unknown>> = {}) => record({ ...shape, network });
  const callFields = { from: optional(address), value: optional(weiHex) };
  const byId: Record<EndpointId, fc.Arbitrary<ChainRequest>> = {
    allowance: query({ contract: address, owner: address, spender: address }).map((q) => ({ query: q })),
    blockNumber: query().map((q) => ({ query: q })),
    block: fc.tuple(blockSelector, query()).map(([number, q]) => ({ path: { number }, query: q })),
    call: fc
      .tuple(query(), record({ to: address, data: hexData, ...callFields, block: optional(blockSelector) }))
      .map(([q, body]) => ({ query: q, body })),
    chainId: query().map((q) => ({ query: q })),
    code: fc.tuple(address, query()).map(([a, q]) => ({ path: { address: a }, query: q })),
    contract: fc.tuple(address, query()).map(([a, q]) => ({ path: { address: a }, query: q })),
    ens: fc.tuple(fc.oneof(ensName, address), query()).map(([input, q]) => ({ path: { input }, query: q })),
    erc1155Balance: query({ address, contract: address, token_id: tokenId }).map((q) => ({ query: q })),
    erc20Balance: query({ address, contract: address }).map((q) => ({ query: q })),
    erc20Transfers: fc
      .tuple(query({ contract: optional(address), address: optional(address) }), logRange)
      .map(([q, range]) => ({ query: { ...q, ...defined(range) } })),
    erc721Tokens: query({ contract: address, address, max: optional(max) }).map((q) => ({ query: q })),
    estimateGas: fc
      .tuple(query(), record({ to: optional(address), data: optional(hexData), ...callFields }))
      .map(([q, body]) => ({ query: q, body })),
    events: query({
      contract: optional(address),
      topic: optional(hash32),
      topic1: optional(hash32),
      topic2: optional(hash32),
      topic3: optional(hash32),
    })
      .chain((q) => logRange.map((range) => ({ ...q, ...defined(range) })))
      .map((q) => ({ query: q })),
    networkInfo: query().map((q) => ({ query: q })),
    balance: fc
      .tuple(address, query({ block: optional(blockSelector) }))
      .map(([a, q]) => ({ path: { address: a }, query: q })),
    nftMetadata: fc
      .tuple(address, tokenId, query())
      .map(([contract, token_id, q]) => ({ path: { contract, token_id }, query: q })),
    receipt: fc.tuple(hash32, query()).map(([hash, q]) => ({ path: { hash }, query: q })),
    transaction: fc.tuple(hash32, query()).map(([hash, q]) => ({ path: { hash }, query: q })),
  };
  return byId[endpoint.id as EndpointId];
}

/** Every string in an answer that is an address. */
function addressesIn(value: unknown): string[] {
  if (typeof value === "string") return /^0x[0-9a-fA-F]{40}$/.test(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(addressesIn);
  if (value && typeof value === "object") return Object.values(value).flatMap(addressesIn);
  return [];
}

describe("property: valid input never gets a 5xx, and every answer matches /openapi.json", () => {
  it.each(ENDPOINTS.map((e) => [e.id, e] as const))("%s", async (_id, endpoint) => {
    const auth = { Authorization: `Bearer ${apiKey}` };
    await fc.assert(
      fc.asyncProperty(requestsFor(endpoint), async (req) => {
        // The generators only make what the catalog accepts.
        const checked = validateRequest(endpoint, {
          path: req.path ?? {},
          query: req.query ?? {},
          body: req.body,
        });
        expect(checked.ok, JSON.stringify({ req, checked })).toBe(true);
        const url = urlOf(endpoint.path, req);
        const res = endpoint.method === "GET" ? await get(url, auth) : await post(url, req.body, auth);
        const where = `${endpoint.method} ${url} ${JSON.stringify(req.body ?? "")} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
        expect(res.status, where).toBeLessThan(500);
        expect(res.body.meta?.endpoint, where).toBe(endpoint.path);
        for (const a of addressesIn(res.body.data)) expect(a, where).toBe(a.toLowerCase());
      }),
      { numRuns: RUNS_PER_ENDPOINT },
    );
  });
});
