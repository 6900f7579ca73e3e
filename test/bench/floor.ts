// The floors the mesh is measured against: one Node process that serves block-number the way the
// gateway answers it (the envelope, a request id) by one eth_blockNumber to its own node, with no
// authentication, no hop and no metering. Two clients, as a plain Node proxy is written:
//   agent  node:http.request on a keep-alive http.Agent (the strong floor: what a careful proxy
//          does, and what the mesh's ratios are reported against)
//   fetch  the global fetch (undici under a WHATWG layer: ~2.5× the CPU per call of the agent)
// Usage: floor.ts <node rpc url> <agent|fetch>. Prints its port on stdout once listening.
import { randomUUID } from "node:crypto";
import { Agent, createServer, request } from "node:http";

const [nodeUrl, client = "agent"] = process.argv.slice(2);
if (!nodeUrl || (client !== "agent" && client !== "fetch"))
  throw new Error("usage: floor.ts <node rpc url> <agent|fetch>");
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] });
const target = new URL(nodeUrl);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** eth_blockNumber over a pooled keep-alive connection. */
function viaAgent(): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve((JSON.parse(Buffer.concat(chunks).toString()) as { result: string }).result),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function viaFetch(): Promise<string> {
  const answer = await fetch(nodeUrl as string, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return ((await answer.json()) as { result: string }).result;
}

const blockNumber = client === "agent" ? viaAgent : viaFetch;

const server = createServer(async (req, res) => {
  const requestId = randomUUID();
  try {
    const result = await blockNumber();
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "x-request-id": requestId });
    res.end(
      JSON.stringify({
        data: { block_number: result, network: "ethereum" },
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
