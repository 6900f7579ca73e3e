// rpc-proxy upstream pool: failover, retries inside the deadline, circuit breaker and
// health, against a real anvil node behind local HTTP proxies that can die or hang.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { grpc } from "@tollgate/platform";
import { describe, expect, it } from "vitest";
import {
  closedPort,
  eventually,
  type LogLine,
  memoryLogger,
  metricSum,
  metricValue,
  upstreamSuite,
} from "./helpers.ts";

const suite = upstreamSuite();
const proxy = () => suite.proxy();
const service = suite.service.bind(suite);

const deadUrl = async () => `http://127.0.0.1:${await closedPort()}/v3/SECRET-KEY-dead`;

describe("rpc-proxy upstream pool", () => {
  it("serves every request when one of two upstreams is a closed port", async () => {
    const good = await proxy();
    const svc = await service({ upstreams: { ethereum: [await deadUrl(), good.url()] } });
    const results = await Promise.all(Array.from({ length: 30 }, () => svc.execute("blockNumber", {})));
    for (const r of results) {
      expect(r.data.block_number).toMatch(/^0x[0-9a-f]+$/);
      expect(r.roundTrips).toBe(1);
    }
    const { networks } = await svc.listNetworks();
    const eth = networks.find((n) => n.name === "ethereum")!;
    expect(eth.upstreams.map((u) => [u.label, u.healthy])).toEqual([
      ["ethereum-0", false],
      ["ethereum-1", true],
    ]);
  });

  it("fails over when one of two healthy upstreams dies after start", async () => {
    const doomed = await proxy();
    const good = await proxy();
    const svc = await service({
      upstreams: { ethereum: [doomed.url(), good.url()] },
      // No background polls after the first: only live requests can discover the death.
      upstream: { headPollMs: 60_000 },
    });
    expect((await svc.listNetworks()).networks[0]!.upstreams.every((u) => u.healthy)).toBe(true);
    await doomed.close();
    for (let i = 0; i < 20; i++) {
      const r = await svc.execute("chainId", {});
      expect(r.data.chain_id).toBe("0x1");
    }
    const text = await svc.metrics();
    const failures =
      metricSum(text, "rpc_proxy_upstream_errors_total", {
        upstream: "ethereum-0",
        outcome: "connect_error",
      }) +
      metricSum(text, "rpc_proxy_upstream_errors_total", {
        upstream: "ethereum-0",
        outcome: "network_error",
      });
    // Round-robin sent some first attempts to the dead upstream; its breaker then opened.
    expect(failures).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, "rpc_proxy_upstream_breaker_state", { upstream: "ethereum-0" })).toBe(1);
    expect(metricValue(text, "rpc_proxy_upstream_breaker_state", { upstream: "ethereum-1" })).toBe(0);
  });

  it("fails fast with UNAVAILABLE upstream_unavailable when every upstream is down, never hanging", async () => {
    const svc = await service({ upstreams: { ethereum: [await deadUrl(), await deadUrl()] } });
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const failure = await svc.fail("blockNumber", {}, { deadlineMs: 5_000 });
      const elapsed = Date.now() - started;
      expect(failure.grpcCode).toBe(grpc.status.UNAVAILABLE);
      expect(failure.code).toBe("upstream_unavailable");
      expect(elapsed).toBeLessThan(1_000);
    }
  });

  it("fails over from an upstream that simulates a hung node (accepts connections, never answers)", async () => {
    const hung = await proxy();
    const good = await proxy();
    const svc = await service({
      upstreams: { ethereum: [hung.url(), good.url()] },
      upstream: { timeoutMs: 300, headPollMs: 60_000 },
    });
    hung.mode = "hang";
    let slowest = 0;
    for (let i = 0; i < 8; i++) {
      const started = Date.now();
      const r = await svc.execute("blockNumber", {}, { deadlineMs: 5_000 });
      slowest = Math.max(slowest, Date.now() - started);
      expect(r.data.block_number).toMatch(/^0x/);
    }
    const text = await svc.metrics();
    expect(
      metricSum(text, "rpc_proxy_upstream_errors_total", { upstream: "ethereum-0", outcome: "timeout" }),
    ).toBeGreaterThanOrEqual(1);
    // A request that met the hung node first waited out one attempt timeout, no more.
    expect(slowest).toBeGreaterThanOrEqual(290);
    expect(slowest).toBeLessThan(2_000);
  });

  it("answers upstream_timeout before the caller's deadline when the only upstream simulates a hung node", async () => {
    const hung = await proxy();
    const svc = await service({ upstreams: { ethereum: [hung.url()] }, upstream: { headPollMs: 60_000 } });
    hung.mode = "hang";
    // Default per-attempt timeout (2500 ms) is longer than the deadline: the deadline wins.
    const started = Date.now();
    const failure = await svc.fail("blockNumber", {}, { deadlineMs: 1_000 });
    const elapsed = Date.now() - started;
    expect(failure.code).toBe("upstream_timeout"); // our answer, not the client's own deadline
    expect(failure.grpcCode).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(1_000);
  });

  it("retries a lone hung node with backoff and gives up with upstream_timeout well within the deadline", async () => {
    const hung = await proxy();
    const svc = await service({
      upstreams: { ethereum: [hung.url()] },
      upstream: { timeoutMs: 200, headPollMs: 60_000, maxAttempts: 3 },
    });
    hung.mode = "hang";
    const mark = hung.requests.length;
    const started = Date.now();
    const failure = await svc.fail("blockNumber", {}, { deadlineMs: 10_000 });
    const elapsed = Date.now() - started;
    expect(failure.code).toBe("upstream_timeout");
    expect(hung.since(mark)).toHaveLength(3); // three attempts, each timed out
    expect(elapsed).toBeGreaterThanOrEqual(600);
    expect(elapsed).toBeLessThan(2_500);
  });

  it("fails over from an upstream that answers with rate-limit JSON-RPC errors", async () => {
    const throttled = await proxy();
    const good = await proxy();
    const svc = await service({
      upstreams: { ethereum: [throttled.url(), good.url()] },
      upstream: { headPollMs: 60_000 },
    });
    throttled.mode = "throttle";
    for (let i = 0; i < 6; i++) expect((await svc.execute("chainId", {})).data.chain_id).toBe("0x1");
    const text = await svc.metrics();
    expect(
      metricSum(text, "rpc_proxy_upstream_errors_total", { upstream: "ethereum-0", outcome: "rate_limited" }),
    ).toBeGreaterThanOrEqual(1);
  });

  it("opens the breaker on a dead upstream and closes it once the upstream is back", async () => {
    const logs: LogLine[] = [];
    const flaky = await proxy();
    const good = await proxy();
    const svc = await service(
      {
        upstreams: { ethereum: [flaky.url(), good.url()] },
        upstream: { headPollMs: 100, breakerThreshold: 2, breakerCooldownMs: 300, timeoutMs: 500 },
      },
      memoryLogger(logs),
    );
    const breaker = async () =>
      metricValue(await svc.metrics(), "rpc_proxy_upstream_breaker_state", { upstream: "ethereum-0" });
    expect(await breaker()).toBe(0);

    await flaky.close();
    await eventually(async () => (await breaker()) === 1);
    const down = await svc.listNetworks();
    expect(down.networks[0]!.upstreams[0]).toMatchObject({
      label: "ethereum-0",
      breaker: "open",
      healthy: false,
    });
    expect(metricValue(await svc.metrics(), "rpc_proxy_upstream_healthy", { upstream: "ethereum-0" })).toBe(
      0,
    );
    // Meanwhile every request is served by the other upstream.
    for (let i = 0; i < 5; i++) expect((await svc.execute("blockNumber", {})).roundTrips).toBe(1);

    await flaky.reopen();
    const mark = flaky.requests.length;
    await eventually(async () => (await breaker()) === 0);
    await eventually(async () => {
      const text = await svc.metrics();
      return metricValue(text, "rpc_proxy_upstream_healthy", { upstream: "ethereum-0" }) === 1;
    });
    expect(flaky.since(mark).length).toBeGreaterThanOrEqual(1); // the half-open probe got through
    const up = await svc.listNetworks();
    expect(up.networks[0]!.upstreams[0]).toMatchObject({
      label: "ethereum-0",
      breaker: "closed",
      healthy: true,
    });

    // Upstreams are known by label only: their URLs (which may carry a key) appear nowhere.
    const exposed = JSON.stringify(logs) + (await svc.metrics()) + JSON.stringify(up);
    expect(exposed).not.toContain("SECRET-KEY");
    expect(exposed).not.toContain(`:${flaky.port}`);
    expect(logs.some((l) => l.msg === "upstream head poll failed")).toBe(true);
    expect(flaky.requests[0]!.path).toBe("/v3/SECRET-KEY-abc123"); // the path did reach the node
  });

  it("reports head block and lag per upstream in ListNetworks and metrics", async () => {
    const p = await proxy();
    const svc = await service({ upstreams: { ethereum: [p.url()] } });
    const head = Number.parseInt(String((await svc.execute("blockNumber", {})).data.block_number), 16);
    const { networks } = await svc.listNetworks();
    const eth = networks.find((n) => n.name === "ethereum")!;
    expect(eth.chainId).toBe(1);
    expect(eth.upstreams[0]).toMatchObject({
      label: "ethereum-0",
      healthy: true,
      breaker: "closed",
      lagBlocks: 0,
    });
    expect(eth.upstreams[0]!.headBlock).toBe(head);
    const text = await svc.metrics();
    expect(metricValue(text, "rpc_proxy_upstream_head_block", { upstream: "ethereum-0" })).toBe(head);
    expect(metricValue(text, "rpc_proxy_upstream_lag_blocks", { upstream: "ethereum-0" })).toBe(0);
    expect(
      metricSum(text, "rpc_proxy_upstream_request_duration_seconds_count", {
        upstream: "ethereum-0",
        method: "eth_blockNumber",
        outcome: "ok",
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(text).toContain("grpc_server_handling_seconds");
  });

  it("prefers the least-lagging upstream and reports the lagging one as unhealthy", async () => {
    const behind = await suite.node();
    await fetch(suite.anvil.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: ["0x14"] }),
    });
    const ahead = await proxy();
    const lagging = await suite.proxy(behind.rpcUrl);
    const svc = await service({
      upstreams: { ethereum: [lagging.url(), ahead.url()] },
      upstream: { maxLagBlocks: 5, headPollMs: 60_000 },
    });
    const head = BigInt((await svc.execute("blockNumber", {})).data.block_number as string);
    expect(head).toBeGreaterThanOrEqual(20n);
    const mark = lagging.requests.length;
    for (let i = 0; i < 10; i++) {
      expect(
        BigInt((await svc.execute("blockNumber", {})).data.block_number as string),
      ).toBeGreaterThanOrEqual(head);
    }
    expect(lagging.since(mark)).toHaveLength(0); // every request went to the upstream in sync
    const eth = (await svc.listNetworks()).networks.find((n) => n.name === "ethereum")!;
    expect(eth.upstreams[0]).toMatchObject({ label: "ethereum-0", healthy: false });
    expect(eth.upstreams[0]!.lagBlocks).toBeGreaterThanOrEqual(20);
    expect(eth.upstreams[1]).toMatchObject({ label: "ethereum-1", healthy: true, lagBlocks: 0 });
  });

  it("stand-in node (an HTTP server streaming an oversized eth_getLogs answer): refused as result_too_large once the byte cap is passed, never read whole", async () => {
    // The stand-in forwards head polls to the real anvil and answers eth_getLogs with an
    // endless log array, written as the reader drains it, so what it managed to write is
    // what rpc-proxy read. `declare` also announces a Content-Length over the cap.
    let written = 0;
    let declare = false;
    let closed: Promise<void> = Promise.resolve();
    const log = `{"address":"0x${"1".repeat(40)}","blockNumber":"0x1","data":"0x${"ab".repeat(512)}","logIndex":"0x0","topics":[],"transactionHash":"0x${"2".repeat(64)}"},`;
    const node = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString("utf8");
      if (!text.includes("eth_getLogs")) {
        const answer = await fetch(suite.anvil.rpcUrl, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: text,
        });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(await answer.text());
        return;
      }
      written = 0;
      closed = new Promise((resolve) => res.once("close", resolve));
      res.writeHead(200, {
        "content-type": "application/json",
        ...(declare ? { "content-length": String(512 * 1024 * 1024) } : {}),
      });
      res.write('{"jsonrpc":"2.0","id":0,"result":[');
      const block = Buffer.from(log.repeat(64));
      while (!res.destroyed && written < 512 * 1024 * 1024) {
        written += block.length;
        if (!res.write(block))
          await new Promise((resolve) => res.once("drain", resolve).once("close", resolve));
      }
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", () => resolve()));
    suite.cleanup(
      () =>
        new Promise((resolve) => {
          node.closeAllConnections();
          node.close(() => resolve());
        }),
    );
    const url = `http://127.0.0.1:${(node.address() as AddressInfo).port}`;
    const cap = 1024 * 1024;
    const svc = await service({
      upstreams: { ethereum: [url] },
      upstream: { maxBodyBytes: cap, headPollMs: 60_000 },
    });

    const failure = await svc.fail("events", { from_block: "0x0", to_block: "0x1" }, { deadlineMs: 10_000 });
    expect(failure).toMatchObject({ grpcCode: grpc.status.FAILED_PRECONDITION, code: "result_too_large" });
    expect(failure.message).toContain(String(cap));
    await closed;
    // rpc-proxy stopped reading a little past the cap (socket buffers), not at 512 MiB.
    expect(written).toBeLessThan(16 * cap);

    declare = true;
    const announced = await svc.fail(
      "events",
      { from_block: "0x0", to_block: "0x1" },
      { deadlineMs: 10_000 },
    );
    expect(announced.code).toBe("result_too_large");
    await closed;
    expect(written).toBeLessThan(16 * cap);

    // The node answered; it is not broken: its breaker stays closed and it keeps serving.
    const text = await svc.metrics();
    expect(metricValue(text, "rpc_proxy_upstream_breaker_state", { upstream: "ethereum-0" })).toBe(0);
    expect((await svc.execute("blockNumber", {})).data.block_number).toMatch(/^0x/);
  });

  it("never uses an upstream that serves another chain", async () => {
    const p = await proxy(); // anvil runs chain 1: wrong for sepolia
    const svc = await service({ upstreams: { sepolia: [p.url()] } });
    const failure = await svc.fail("chainId", {}, { network: "sepolia" });
    expect(failure.code).toBe("upstream_unavailable");
    const { networks } = await svc.listNetworks();
    expect(networks.find((n) => n.name === "sepolia")!.upstreams[0]!.healthy).toBe(false);
  });
});
