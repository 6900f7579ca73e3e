/**
 * Prepaid credits against `pnpm start`'s local mesh:
 *   pnpm example:credits
 * 1. The operator makes an account whose plan allows 1 call a day, and a key for it (the CLI's
 *    admin client, with the token `pnpm start` wrote to .tollgate/operator-token).
 * 2. payer1 buys 1 USDC of credits for that key's account with the official x402 client
 *    (`POST /api/credits?amount=1`, the key sent beside the payment).
 * 3. The key's first call of the day is on the plan; the next ones are paid from the credits
 *    (X-Credits-Remaining counts down).
 * 4. payer2 buys 1 USDC of credits for its own wallet (no key: the top-up makes it an account, credits
 *    only: buying credits gives no plan volume), and payer2 spends them with sign-in-with-x: each call
 *    signs a fresh proof of the 402's challenge (official @x402/extensions client), no key, no payment.
 */
import { readFileSync } from "node:fs";
import { createAdminClient } from "@tollgate/cli/clients/quota-admin";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithSIWx } from "@x402/extensions/sign-in-with-x";
import { type Network, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

const root = new URL("../../.tollgate/", import.meta.url);
const gateway = `http://127.0.0.1:${process.env.PORT ?? 8080}`;
const devnet = JSON.parse(readFileSync(process.env.DEVNET_FILE ?? new URL("devnet.json", root), "utf8"));
const payer = devnet.accounts.find((a: { role: string }) => a.role === "payer1");
const network = devnet.demo.settlement.network as Network;

// 1. An account on a plan of 1 call a day, and its key.
const admin = createAdminClient(
  process.env.QUOTA_METER_ADDR ?? "127.0.0.1:9451",
  process.env.OPERATOR_TOKEN ?? readFileSync(new URL("operator-token", root), "utf8").trim(),
);
const { account, secret } = await admin.quickstart(`credits example ${new Date().toISOString()}`, {
  daily: 1,
  monthly: 0,
});
console.log("account", account?.id, "key", `${secret.slice(0, 12)}…`);

// 2. Buy 1 USDC of credits for it, paid with x402 exact.
const client = new x402Client()
  .setSpendControls({ allowedAssets: [{ network, asset: devnet.demo.settlement.usdc.address }] })
  .register(network, new ExactEvmScheme(privateKeyToAccount(payer.privateKey)));
const bought = await wrapFetchWithPayment(fetch, client)(`${gateway}/api/credits?amount=1`, {
  method: "POST",
  headers: { authorization: `Bearer ${secret}` },
});
console.log("top-up", bought.status, JSON.stringify(((await bought.json()) as { data: unknown }).data));

// 3. Spend: the plan's one call, then calls paid from the credits.
for (let i = 0; i < 3; i++) {
  const res = await fetch(`${gateway}/api/chain/block-number`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  const body = (await res.json()) as { meta: { cost_usdc?: string } };
  console.log(
    `call ${i + 1}:`,
    res.status,
    `X-Quota-Day-Used ${res.headers.get("x-quota-day-used")}`,
    `X-Credits-Remaining ${res.headers.get("x-credits-remaining") ?? "(on the plan)"}`,
    `cost ${body.meta.cost_usdc ?? "-"}`,
  );
}

// 4. A wallet buys credits for itself and spends them signed in (sign-in-with-x), without a key.
const wallet = privateKeyToAccount(
  devnet.accounts.find((a: { role: string }) => a.role === "payer2").privateKey,
);
const own = new x402Client()
  .setSpendControls({ allowedAssets: [{ network, asset: devnet.demo.settlement.usdc.address }] })
  .register(network, new ExactEvmScheme(wallet));
const toppedUp = await wrapFetchWithPayment(fetch, own)(`${gateway}/api/credits?amount=1`, {
  method: "POST",
});
const topUp = ((await toppedUp.json()) as { data: { account_id: string | null } }).data;
console.log("wallet top-up", toppedUp.status, JSON.stringify(topUp));
// The account its top-up made is credits only (no plan volume until a dashboard sign-up): its calls
// draw the credits from the first.
admin.close();
const signedIn = wrapFetchWithSIWx(fetch, wallet);
for (let i = 0; i < 2; i++) {
  const res = await signedIn(`${gateway}/api/chain/block-number`);
  const body = (await res.json()) as { meta: { cost_usdc?: string } };
  console.log(
    `signed-in call ${i + 1}:`,
    res.status,
    `X-Credits-Remaining ${res.headers.get("x-credits-remaining")}`,
    `cost ${body.meta.cost_usdc ?? "-"}`,
    `PAYMENT-RESPONSE ${res.headers.get("payment-response") ? "yes" : "none"}`,
  );
}
