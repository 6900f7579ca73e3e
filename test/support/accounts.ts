import { contracts, createClient, grpc } from "@tollgate/platform";
import { inject } from "vitest";

const mesh = inject("mesh");

function admin() {
  return createClient(contracts.quotaMeter().QuotaAdminService, mesh.quotaMeterAddr, {
    service: "quota-admin",
    defaultDeadlineMs: 5_000,
  });
}

function auth(): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${mesh.operatorToken}`);
  return md;
}

/** Creates an account with the given plan and one key for it, through the admin API. */
export async function createAccountWithKey(plan: { daily?: number; monthly?: number; burst?: number } = {}) {
  const client = admin();
  try {
    const { account } = await client.call(
      "CreateAccount",
      {
        name: `test-${Math.random().toString(36).slice(2)}`,
        ...(plan.daily !== undefined ? { dailyLimit: plan.daily } : {}),
        ...(plan.monthly !== undefined ? { monthlyLimit: plan.monthly } : {}),
        ...(plan.burst !== undefined ? { burstPerSecond: plan.burst } : {}),
      },
      { metadata: auth() },
    );
    if (!account) throw new Error("no account returned");
    const key = await client.call("CreateKey", { accountId: account.id }, { metadata: auth() });
    return { accountId: account.id, keyId: key.key?.id ?? "", apiKey: key.secret };
  } finally {
    client.close();
  }
}

export async function updateAccount(
  accountId: string,
  patch: { status?: string; daily?: number; monthly?: number },
) {
  const client = admin();
  try {
    await client.call(
      "UpdateAccount",
      {
        accountId,
        ...(patch.status !== undefined ? { status: patch.status } : {}),
        ...(patch.daily !== undefined ? { dailyLimit: patch.daily } : {}),
        ...(patch.monthly !== undefined ? { monthlyLimit: patch.monthly } : {}),
      },
      { metadata: auth() },
    );
  } finally {
    client.close();
  }
}

export async function revokeKey(accountId: string, keyId: string) {
  const client = admin();
  try {
    await client.call("RevokeKey", { accountId, keyId }, { metadata: auth() });
  } finally {
    client.close();
  }
}
