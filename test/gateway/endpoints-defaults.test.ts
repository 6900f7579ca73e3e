// What the gateway answers when no network is given (ethereum), and the third network, which serves
// network-info only; called with an API key like endpoints.test.ts (endpoints.support.ts).
import { NETWORKS } from "@tollgate/catalog";
import { describe, expect, it } from "vitest";
import { A, devnet, validRequests } from "../support/devnet.ts";
import { ok, useSuiteKey } from "./endpoints.support.ts";

useSuiteKey();

describe("defaults and the third network", () => {
  it("answers for ethereum when no network is given", async () => {
    const { network: _omit, ...query } = validRequests("ethereum").erc20Balance.query as Record<
      string,
      string
    >;
    const data = await ok("erc20Balance", { query });
    expect(data.balance).toBe(devnet.demo.ethereum.erc20.balances[A]);
    expect(await ok("chainId", {})).toEqual({ chain_id: "0x1", network: "ethereum" });
  });

  it("network-info serves the third network (0x1237)", async () => {
    const third = NETWORKS.find((n) => n.scope === "network-info");
    if (!third) throw new Error("the catalog has no third network");
    const info = await ok("networkInfo", { query: { network: third.name } });
    expect(info).toEqual({
      chain_id: "0x1237",
      block_number: expect.stringMatching(/^0x[0-9a-f]+$/),
      gas_price: expect.stringMatching(/^0x[0-9a-f]+$/),
      network: third.name,
    });
  });
});
