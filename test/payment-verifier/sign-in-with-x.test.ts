// payment-verifier's sign-in-with-x check on plain objects: the 402's declaration, and proofs made
// and signed by the official client helpers of @x402/extensions with a viem account, accepted once
// and refused when replayed, made for another origin, expired, forged or malformed. The nonce store
// runs on the machine's Redis and on the single-node stand-in, with one contract for both.
import { createSIWxClientHook, encodeSIWxHeader, SIGN_IN_WITH_X } from "@x402/extensions/sign-in-with-x";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  SIGN_IN_MAX_AGE_MS,
  type SignInOptions,
  SignInWithX,
} from "../../services/payment-verifier/src/protocols/sign-in-with-x.ts";
import {
  MemorySignInNonceStore,
  RedisSignInNonceStore,
  type SignInNonceStore,
} from "../../services/payment-verifier/src/stores/sign-in-nonces.ts";
import { eventually } from "../support/eventually.ts";
import { testRedis } from "../support/redis.ts";

const PREFIX = `test-siwx-${process.pid}-${Date.now()}:`;
const redis = testRedis(PREFIX);

const CHAIN = "eip155:84532";
const ORIGIN = "http://api.tollgate.test:8080";
const URL_HERE = `${ORIGIN}/api/chain/chain-id?network=ethereum`;

let ids = 0;
const requestId = () => `req-${process.pid}-${++ids}`;

function verifier(overrides: Partial<SignInOptions> = {}) {
  return new SignInWithX({
    chains: [CHAIN],
    nonces: new MemorySignInNonceStore(),
    countAttempt: async () => undefined,
    ...overrides,
  });
}

type Declared = {
  info: Record<string, unknown> & { domain: string; uri: string; nonce: string; issuedAt: string };
  supportedChains: { chainId: string; type: string }[];
};

/** The 402's sign-in-with-x extension for `url`, as a server of `origin`'s would declare it. */
async function declared(signIn: SignInWithX, url: string): Promise<Declared> {
  const ext = await signIn.declare(url);
  return ext?.[SIGN_IN_WITH_X] as Declared;
}

/** What the official client hook sends for a 402 carrying `extension`, fetched from `requestUrl`. */
async function proofFor(
  account: PrivateKeyAccount,
  extension: Declared,
  requestUrl = URL_HERE,
): Promise<string> {
  const hook = createSIWxClientHook(account);
  const out = await hook({
    paymentRequired: {
      x402Version: 2,
      resource: { url: requestUrl },
      accepts: [],
      extensions: { [SIGN_IN_WITH_X]: extension },
    },
    requestUrl,
  } as never);
  const header = out?.headers[SIGN_IN_WITH_X];
  if (!header) throw new Error("the official client hook made no proof");
  return header;
}

const decode = (header: string) => JSON.parse(Buffer.from(header, "base64").toString("utf8"));

describe("the 402's sign-in-with-x declaration", () => {
  it("binds a fresh challenge to the public origin and the resource's URI, valid 5 minutes, on the settlement chain", async () => {
    const signIn = verifier();
    const before = Date.now();
    const a = await declared(signIn, URL_HERE);
    const b = await declared(signIn, URL_HERE);
    expect(a.info.domain).toBe("api.tollgate.test:8080");
    expect(a.info.uri).toBe(URL_HERE);
    expect(a.info.version).toBe("1");
    expect(a.info.statement).toMatch(/no payment is taken/);
    expect(a.info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(b.info.nonce).not.toBe(a.info.nonce);
    const issued = Date.parse(a.info.issuedAt);
    expect(issued).toBeGreaterThanOrEqual(before - 1);
    // (the helper reads the clock once for each)
    const valid = Date.parse(String(a.info.expirationTime)) - issued;
    expect(valid).toBeGreaterThanOrEqual(SIGN_IN_MAX_AGE_MS);
    expect(valid).toBeLessThan(SIGN_IN_MAX_AGE_MS + 50);
    expect(a.supportedChains).toEqual([{ chainId: CHAIN, type: "eip191" }]);
  });

  it("is not declared for a relative URL: no public origin to bind a proof to", async () => {
    expect(await verifier().declare("/api/chain/chain-id")).toBeUndefined();
  });
});

describe("a sign-in-with-x proof", () => {
  it("signed by the official client helpers is valid once, for its wallet; replayed by another request it is refused", async () => {
    const signIn = verifier();
    const account = privateKeyToAccount(generatePrivateKey());
    const proof = await proofFor(account, await declared(signIn, URL_HERE));
    expect(decode(proof)).toMatchObject({ address: account.address, chainId: CHAIN });

    const first = requestId();
    expect(await signIn.verify({ requestId: first, url: URL_HERE, proof, client: "10.0.0.1" })).toEqual({
      valid: true,
      wallet: account.address.toLowerCase(),
      chainId: CHAIN,
    });
    // The same request asking again (its answer lost) is answered the same.
    expect(await signIn.verify({ requestId: first, url: URL_HERE, proof, client: "10.0.0.1" })).toMatchObject(
      {
        valid: true,
      },
    );
    const replay = await signIn.verify({ requestId: requestId(), url: URL_HERE, proof, client: "10.0.0.2" });
    expect(replay).toMatchObject({ valid: false, error: "invalid", code: "invalid_siwx_nonce" });
    expect(replay.valid ? "" : replay.reason).toMatch(/used already/);
  });

  it("for another origin is refused, however valid its signature", async () => {
    const signIn = verifier();
    const account = privateKeyToAccount(generatePrivateKey());
    const elsewhere = "https://other.example/api/chain/chain-id?network=ethereum";
    const proof = await proofFor(account, await declared(signIn, elsewhere), elsewhere);
    const out = await signIn.verify({ requestId: requestId(), url: URL_HERE, proof, client: "10.0.0.1" });
    expect(out).toMatchObject({ valid: false, error: "invalid", code: "invalid_siwx_domain_mismatch" });
    expect(out.valid ? "" : out.reason).toContain("api.tollgate.test:8080");
  });

  it("with this domain but another origin's URI is refused", async () => {
    const signIn = verifier();
    const account = privateKeyToAccount(generatePrivateKey());
    const ext = await declared(signIn, URL_HERE);
    const other = `https://api.tollgate.test:8080/api/chain/chain-id`;
    const proof = await proofFor(account, { ...ext, info: { ...ext.info, uri: other } }, other);
    const out = await signIn.verify({ requestId: requestId(), url: URL_HERE, proof, client: "10.0.0.1" });
    expect(out).toMatchObject({ valid: false, code: "invalid_siwx_uri_mismatch" });
  });

  it("past its expiry, or issued more than 5 minutes ago, is refused", async () => {
    const signIn = verifier();
    const account = privateKeyToAccount(generatePrivateKey());
    const ext = await declared(signIn, URL_HERE);
    const now = Date.now();
    const expired = await proofFor(account, {
      ...ext,
      info: {
        ...ext.info,
        issuedAt: new Date(now - 60_000).toISOString(),
        expirationTime: new Date(now - 1_000).toISOString(),
      },
    });
    expect(
      await signIn.verify({ requestId: requestId(), url: URL_HERE, proof: expired, client: "c" }),
    ).toMatchObject({ valid: false, code: "invalid_siwx_expired" });
    const old = await proofFor(account, {
      ...ext,
      info: {
        ...ext.info,
        nonce: "abcdef0123456789abcdef0123456789",
        issuedAt: new Date(now - SIGN_IN_MAX_AGE_MS - 10_000).toISOString(),
        expirationTime: new Date(now + 60_000).toISOString(),
      },
    });
    expect(
      await signIn.verify({ requestId: requestId(), url: URL_HERE, proof: old, client: "c" }),
    ).toMatchObject({
      valid: false,
      code: "invalid_siwx_issued_at_too_old",
    });
  });

  it("signed by another wallet than it names is refused, and uses up nothing: the genuine proof still passes", async () => {
    const signIn = verifier();
    const owner = privateKeyToAccount(generatePrivateKey());
    const forger = privateKeyToAccount(generatePrivateKey());
    const ext = await declared(signIn, URL_HERE);
    const genuine = decode(await proofFor(owner, ext));
    const forged = { ...genuine, signature: decode(await proofFor(forger, ext)).signature };
    const out = await signIn.verify({
      requestId: requestId(),
      url: URL_HERE,
      proof: encodeSIWxHeader(forged),
      client: "c",
    });
    expect(out).toMatchObject({ valid: false, code: "invalid_siwx_signature" });
    expect(
      await signIn.verify({
        requestId: requestId(),
        url: URL_HERE,
        proof: encodeSIWxHeader(genuine),
        client: "c",
      }),
    ).toMatchObject({ valid: true, wallet: owner.address.toLowerCase() });
  });

  it("that is malformed is refused naming the problem", async () => {
    const signIn = verifier();
    const account = privateKeyToAccount(generatePrivateKey());
    const genuine = decode(await proofFor(account, await declared(signIn, URL_HERE)));
    const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64");
    const cases: [string, string, RegExp][] = [
      ["", "invalid_siwx_header", /empty/],
      ["not base64!", "invalid_siwx_header", /base64/],
      [b64("{not json"), "invalid_siwx_header", /JSON/],
      [b64({ ...genuine, signature: undefined }), "invalid_siwx_header", /signature/],
      [b64({ ...genuine, address: "0x1234" }), "invalid_siwx_header", /address/],
      [b64({ ...genuine, signature: "0xzz" }), "invalid_siwx_malformed_signature", /signature/],
      [b64({ ...genuine, nonce: "short" }), "invalid_siwx_nonce", /nonce/],
      [b64({ ...genuine, chainId: "eip155:1" }), "invalid_siwx_unsupported_chain", /eip155:1.*accepted here/],
      ["A".repeat(9_000), "invalid_siwx_header", /over 8192/],
    ];
    for (const [proof, code, reason] of cases) {
      const out = await signIn.verify({ requestId: requestId(), url: URL_HERE, proof, client: "c" });
      expect(out, proof.slice(0, 40)).toMatchObject({ valid: false, error: "invalid", code });
      expect(out.valid ? "" : out.reason, proof.slice(0, 40)).toMatch(reason);
    }
  });

  it("is refused before any check when the client's attempt limit is full", async () => {
    const signIn = verifier({ countAttempt: async () => "client" });
    const proof = await proofFor(
      privateKeyToAccount(generatePrivateKey()),
      await declared(verifier(), URL_HERE),
    );
    expect(await signIn.verify({ requestId: requestId(), url: URL_HERE, proof, client: "c" })).toMatchObject({
      valid: false,
      error: "rate_limited",
    });
  });

  it("from a smart wallet is the settlement chain's to judge (a stand-in for the chain read); its outage is a 503, not a refusal", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const wallet = "0x000000000000000000000000000000000000c0de";
    const asked: string[] = [];
    const accepting = verifier({
      evmVerifier: async ({ address }) => {
        asked.push(address);
        return address.toLowerCase() === wallet;
      },
    });
    // The wallet's owner key signs; the proof names the contract wallet.
    const signed = decode(await proofFor(account, await declared(accepting, URL_HERE)));
    const proof = encodeSIWxHeader({ ...signed, address: wallet });
    expect(
      await accepting.verify({ requestId: requestId(), url: URL_HERE, proof, client: "c" }),
    ).toMatchObject({
      valid: true,
      wallet,
    });
    expect(asked).toEqual([wallet]);
    const down = verifier({
      evmVerifier: async () => {
        throw new Error("connect ECONNREFUSED");
      },
    });
    const again = encodeSIWxHeader({
      ...decode(await proofFor(account, await declared(down, URL_HERE))),
      address: wallet,
    });
    expect(
      await down.verify({ requestId: requestId(), url: URL_HERE, proof: again, client: "c" }),
    ).toMatchObject({
      valid: false,
      error: "service_unavailable",
    });
  });

  it("cannot be checked without a public origin", async () => {
    const signIn = verifier();
    const proof = await proofFor(privateKeyToAccount(generatePrivateKey()), await declared(signIn, URL_HERE));
    const out = await signIn.verify({
      requestId: requestId(),
      url: "/api/chain/chain-id",
      proof,
      client: "c",
    });
    expect(out).toMatchObject({ valid: false, error: "invalid" });
    expect(out.valid ? "" : out.reason).toMatch(/PUBLIC_BASE_URL/);
  });
});

describe.each([
  ["redis", () => new RedisSignInNonceStore(redis, PREFIX) as SignInNonceStore],
  ["memory", () => new MemorySignInNonceStore() as SignInNonceStore],
])("sign-in nonce store contract: %s", (_name, make) => {
  it("one of many concurrent uses of a nonce is fresh; the same holder again is `again`, any other `used`", async () => {
    const store = make();
    const nonce = `n${Math.random().toString(36).slice(2)}x`;
    const uses = await Promise.all(Array.from({ length: 20 }, (_, i) => store.use(nonce, `h${i}`, 60_000)));
    expect(uses.filter((u) => u === "fresh")).toHaveLength(1);
    expect(uses.filter((u) => u === "used")).toHaveLength(19);
    const holder = `h${uses.indexOf("fresh")}`;
    expect(await store.use(nonce, holder, 60_000)).toBe("again");
    expect(await store.use(nonce, "someone-else", 60_000)).toBe("used");
    store.close();
  });

  it("forgets a nonce once its time is up", async () => {
    const store = make();
    const nonce = `n${Math.random().toString(36).slice(2)}y`;
    expect(await store.use(nonce, "a", 50)).toBe("fresh");
    expect(await eventually(() => store.use(nonce, "b", 50), "fresh", 10_000, 20)).toBe("fresh");
    store.close();
  });
});
