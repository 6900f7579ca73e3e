// The floor the mesh is measured against: one Node process that serves block-number the way the
// gateway answers it (the envelope, a request id) by one eth_blockNumber to its own node, with no
// authentication, no hop and no metering: node:http and the platform's fetch, what a plain Node
// proxy is written with. Prints its port on stdout once listening.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";

const nodeUrl = process.argv[2];
if (!nodeUrl) throw new Error("usage: floor.ts <node rpc url>");
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] });

const server = createServer(async (req, res) => {
  const requestId = randomUUID();
  try {
    const answer = await fetch(nodeUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const json = (await answer.json()) as { result: string };
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "x-request-id": requestId });
    res.end(
      JSON.stringify({
        data: { block_number: json.result, network: "ethereum" },
        error: null,
        meta: { endpoint: req.url, request_id: requestId },
      }),
    );
  } catch {
    res.writeHead(502).end();
  }
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${typeof address === "object" && address ? address.port : 0}\n`);
});
