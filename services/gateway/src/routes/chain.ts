// The paid chain endpoints: the route table (one route per catalog entry) and the call each route
// makes. Who may make the call is decided by the auth methods in ../auth, chosen here by the
// credentials the request carries.
import { ENDPOINTS, type Endpoint, RPC_ENDPOINT, RPC_PATH, validateRequest } from "@tollgate/catalog";
import { type Request, type Response, Router } from "express";
import { type ApiKeyAuthDeps, apiKeyAuth } from "../auth/api-key.ts";
import { type Caller, type CredentialsOf, type Execute, failureOf, type Outcome } from "../auth/call.ts";
import { type Credentials, readCredentials } from "../auth/credentials.ts";
import { type PaymentAuthDeps, paymentAuth } from "../auth/payment.ts";
import { type SignInAuthDeps, signInAuth } from "../auth/sign-in.ts";
import type { RpcProxyClient } from "../clients/rpc-proxy.ts";
import { type Reply, sendError } from "../envelope.ts";
import { readJsonRpc } from "./json-rpc.ts";

type ChainDeps = ApiKeyAuthDeps &
  PaymentAuthDeps &
  SignInAuthDeps & {
    rpc: RpcProxyClient;
    /** /rpc relays eth_sendRawTransaction (RPC_SEND_RAW_TRANSACTION). */
    rpcSendRawTransaction?: boolean;
  };

/** A chain call's input as the routes read it: path parameters, query, JSON body. */
interface CallInput {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
}

/**
 * The paid chain endpoints. Order of work per request: validate (free, no I/O) → authenticate (key
 * or payment) → one rpc-proxy call → settle or refund. Bad input is refused before anything is
 * counted or charged. `router` serves every chain route through Express; `serveKey` is the same
 * call for an API key, for the fast lane (routes/fast-lane.ts) that serves it without Express.
 */
export function chainCalls(deps: ChainDeps) {
  // Made once: each keeps its own state (leases, paying clients, metrics) across requests.
  const byKey = apiKeyAuth(deps);
  const byPayment = paymentAuth(deps);
  const bySignIn = signInAuth(deps);

  function begin(endpoint: Endpoint, res: Reply): void {
    res.locals.endpoint = endpoint.path;
    res.setHeader("Cache-Control", "no-store");
  }

  /** Validates the call; its one rpc-proxy request, ready to run, or undefined once refused. */
  function prepare(
    endpoint: Endpoint,
    input: CallInput,
    res: Reply,
  ): { network: string; execute: Execute } | undefined {
    const checked = validateRequest(endpoint, input);
    if (!checked.ok) {
      sendError(res, checked.code, checked.message, { parameter: checked.parameter });
      return undefined;
    }
    const network = checked.params.network as string;
    const execute = (): Promise<Outcome> =>
      deps.rpc
        .execute({ requestId: res.locals.requestId, operation: endpoint.id, network, params: checked.params })
        .then((r): Outcome => ({ ok: true, dataJson: r.dataJson }), failureOf);
    return { network, execute };
  }

  /** Hands a validated call to the auth method its credentials choose. */
  function authorized(endpoint: Endpoint, network: string, execute: Execute, req: Request, res: Response) {
    const credentials: Credentials = readCredentials(req);
    res.locals.auth = credentials.kind;
    switch (credentials.kind) {
      case "api_key":
        return byKey(endpoint, network, credentials, execute, req, res);
      case "sign_in":
        return bySignIn(endpoint, network, credentials, execute, req, res);
      case "payment":
        return byPayment.serve(endpoint, network, credentials, execute, req, res);
      case "invalid":
        sendError(res, "invalid_api_key", credentials.reason);
        return;
      case "none":
        return byPayment.challenge(endpoint, network, req, res);
    }
  }

  async function serve(endpoint: Endpoint, req: Request, res: Response): Promise<void> {
    begin(endpoint, res);
    // A body the JSON parser skipped for its media type would otherwise read as "not an object".
    if (endpoint.params.body && req.is(["application/json", "application/*+json"]) === false) {
      sendError(res, "unsupported_media_type", "body: expected Content-Type: application/json", {
        parameter: "body",
      });
      return;
    }
    const call = prepare(endpoint, { path: req.params, query: req.query, body: req.body }, res);
    if (!call) return;
    const { network, execute } = call;
    return authorized(endpoint, network, execute, req, res);
  }

  /** An API-key call without a body, as `serve` makes it. */
  async function serveKey(
    endpoint: Endpoint,
    input: CallInput,
    credentials: CredentialsOf<"api_key">,
    caller: Caller,
    res: Reply,
  ): Promise<void> {
    begin(endpoint, res);
    const call = prepare(endpoint, input, res);
    if (!call) return;
    res.locals.auth = credentials.kind;
    return byKey(endpoint, call.network, credentials, call.execute, caller, res);
  }

  /** POST /rpc/{network} (routes/json-rpc.ts): a checked, priced body, then the same auth methods. */
  async function serveJsonRpc(req: Request, res: Response): Promise<void> {
    const call = readJsonRpc(deps.rpc, req, res, { sendRawTransaction: deps.rpcSendRawTransaction === true });
    if (!call) return;
    const { endpoint, network, execute } = call;
    return authorized(endpoint, network, execute, req, res);
  }

  function router(): Router {
    // Exact paths (see routes/table.ts); a known path with another method is the app's 405.
    const r = Router({ caseSensitive: true, strict: true });
    for (const endpoint of ENDPOINTS) {
      const path = endpoint.path.replace(/\{(\w+)\}/g, ":$1");
      if (endpoint.method === "GET") {
        r.get(path, (req, res) => serve(endpoint, req, res));
        // A bodiless POST with a payment that needs no service (an MPP session close or top-up, which
        // the official client posts to the last paid URL); any other POST is the app's 405.
        r.post(path, (req, res, next) => {
          if (!asksNoService(req)) return next();
          void byPayment.withoutService(endpoint, req, res, next);
        });
      } else {
        r.post(path, (req, res) => {
          if (!asksNoService(req)) return serve(endpoint, req, res);
          void byPayment.withoutService(endpoint, req, res, () => serve(endpoint, req, res));
        });
      }
    }
    r.post(RPC_PATH.replace("{network}", ":network"), (req, res) => {
      if (!asksNoService(req)) return serveJsonRpc(req, res);
      // A bodiless POST with a payment of its own (an MPP session's close or top-up).
      void byPayment.withoutService(RPC_ENDPOINT, req, res, () => serveJsonRpc(req, res));
    });
    return r;
  }

  return { router, serveKey, payments: byPayment };
}

export type ChainCalls = ReturnType<typeof chainCalls>;

/** A POST without a body that carries payment credentials: it can only be a payment of its own. */
function asksNoService(req: Request): boolean {
  if (req.method !== "POST" || req.get("transfer-encoding") !== undefined) return false;
  const length = req.get("content-length");
  if (length !== undefined && length !== "0") return false;
  return readCredentials(req).kind === "payment";
}
