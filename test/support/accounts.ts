import { createAdminClient, type Plan } from "@tollgate/cli/clients/quota-admin";
import { inject } from "vitest";

const mesh = inject("mesh");
const admin = () => createAdminClient(mesh.quotaMeterAddr, mesh.operatorToken);

/** Creates an account with the given plan and one key for it, through the shared mesh's admin API. */
export async function createAccountWithKey(plan: Plan = {}) {
  const client = admin();
  try {
    const { account, key, secret } = await client.quickstart(
      `test-${Math.random().toString(36).slice(2)}`,
      plan,
    );
    return { accountId: account.id, keyId: key.id, apiKey: secret };
  } finally {
    client.close();
  }
}

export async function updateAccount(
  accountId: string,
  patch: { status?: string; daily?: number; monthly?: number; burst?: number; creditsOnly?: boolean },
) {
  const client = admin();
  try {
    await client.updateAccount({
      accountId,
      ...(patch.status !== undefined ? { status: patch.status } : {}),
      ...(patch.daily !== undefined ? { dailyLimit: patch.daily } : {}),
      ...(patch.monthly !== undefined ? { monthlyLimit: patch.monthly } : {}),
      ...(patch.burst !== undefined ? { burstPerSecond: patch.burst } : {}),
      ...(patch.creditsOnly !== undefined ? { creditsOnly: patch.creditsOnly } : {}),
    });
  } finally {
    client.close();
  }
}

export async function revokeKey(accountId: string, keyId: string) {
  const client = admin();
  try {
    await client.revokeKey(accountId, keyId);
  } finally {
    client.close();
  }
}

/** A second key for an existing account (volume stays account-wide). */
export async function createKey(accountId: string) {
  const client = admin();
  try {
    return (await client.createKey(accountId)).secret;
  } finally {
    client.close();
  }
}
