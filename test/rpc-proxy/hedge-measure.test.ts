import { startAnvil } from "@tollgate/devnet/anvil";
import { expect, it } from "vitest";
import { CountingProxy, startService } from "./helpers.ts";

it("MEASURE hedging p99", async () => {
  const anvil = await startAnvil({ chainId: 1, host: "127.0.0.1", accounts: 1 });
  const out: Record<string, unknown> = {};
  for (const budget of [0, 10]) {
    const slow = await new CountingProxy(anvil.rpcUrl).listen();
    const fast = await new CountingProxy(anvil.rpcUrl).listen();
    const svc = await startService({
      upstreams: { ethereum: [slow.url(), fast.url()] },
      upstream: { headPollMs: 60_000, hedgeBudgetPercent: budget },
    });
    for (let i = 0; i < 50; i++) await svc.execute("jsonRpc", { calls: [{ method: "eth_blockNumber", params: [] }] });
    slow.slowEvery = 20;
    const times: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const t = performance.now();
      await svc.execute("jsonRpc", { calls: [{ method: "eth_blockNumber", params: [] }] });
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const text = await svc.metrics();
    out[`budget${budget}`] = {
      p50: times[499]!.toFixed(1),
      p90: times[899]!.toFixed(1),
      p99: times[989]!.toFixed(1),
      slowed: slow.slowed,
      hedges: text.split("\n").filter((l) => l.startsWith("rpc_proxy_hedges_total{") && l.includes("ethereum")),
    };
    await svc.stop();
    await slow.close();
    await fast.close();
  }
  console.log("MEASURE", JSON.stringify(out, null, 1));
  await anvil.stop();
  expect(1).toBe(1);
}, 300_000);
