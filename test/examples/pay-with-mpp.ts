/**
 * Paid calls with the official MPP client (mppx), against `pnpm start`'s local mesh:
 *   pnpm example:mpp [path]           # one charge in USDC.e, then a 3-call session, closed
 * It pays from the devnet's payer1 (1,000 test pathUSD and USDC.e on the local Tempo chain).
 */
import { readFileSync } from "node:fs";
import { Mppx, tempo } from "mppx/client";
import { createClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { tempo as tempoChain } from "viem/tempo/chains";

const devnet = JSON.parse(
  readFileSync(process.env.DEVNET_FILE ?? new URL("../../.tollgate/devnet.json", import.meta.url), "utf8"),
);
const payer = devnet.accounts.find((a: { role: string }) => a.role === "payer1");
const account = privateKeyToAccount(payer.privateKey);
const getClient = () => createClient({ chain: tempoChain, transport: http(devnet.chains.tempo.anvilRpcUrl) });
const url = `http://127.0.0.1:${process.env.PORT ?? 8080}${process.argv[2] ?? "/api/chain/block-number"}`;

// charge: one signed TIP-20 transfer per call (the 402 offers pathUSD first, then USDC.e).
const mppx = Mppx.create({ polyfill: false, methods: [tempo.charge({ account, getClient })] });
const res = await mppx.fetch(url);
console.log(res.status, JSON.stringify(await res.json(), null, 2));
console.log("Payment-Receipt:", res.headers.get("payment-receipt")?.slice(0, 60), "…");

// session: the first call opens a USDC.e channel with a deposit, the next ones pay by voucher.
const session = tempo.session.manager({ account, getClient, maxDeposit: "0.1" });
for (let i = 0; i < 3; i++) console.log("session call", (await session.fetch(url)).receipt);
console.log("closed:", await session.close());
