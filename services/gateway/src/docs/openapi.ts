// /openapi.json and /.well-known/openapi.json: the document, assembled from the parts in this folder.

import type { Json } from "@tollgate/catalog";
import { DEFAULT_PLANS, NETWORKS, type Plans } from "@tollgate/catalog";
import type { PaymentMethod } from "../payment-methods.ts";
import { accountPaths } from "./account-paths.ts";
import { chainPaths } from "./chain-paths.ts";
import { components } from "./components.ts";
import { creditsPaths } from "./credits-paths.ts";
import { freeApiPaths, servicePaths } from "./free-paths.ts";
import { jsonRpcPaths } from "./json-rpc-docs.ts";
import { payDocs } from "./payment-docs.ts";
import { CHARGING_RULE, plansText } from "./wording.ts";

/**
 * OpenAPI 3.1.0 document derived from the catalog: the same zod schemas that
 * validate requests describe them here, so the document cannot drift from behaviour.
 * Its parts are built in this folder: the chain, free and account paths, the components, and what
 * the accepted payment methods add.
 */
export function buildOpenApi(
  serverUrl: string | undefined,
  methods: readonly PaymentMethod[],
  dashboardUrl?: string,
  plans: Plans = DEFAULT_PLANS,
): Json {
  // Sign-in-with-x proofs are bound to the public origin: offered only when one is configured.
  const pay = payDocs(methods, serverUrl !== undefined);
  const planWords = plansText(plans, pay.text);
  (pay.schemes.apiKey as Json).description =
    `API-key plan: \`Authorization: Bearer <API key>\`. ${planWords}`;
  const paths: Json = {
    ...chainPaths(pay),
    ...creditsPaths(methods),
    ...jsonRpcPaths(pay),
    ...freeApiPaths(plans, pay),
    ...accountPaths(dashboardUrl),
    ...servicePaths(),
  };

  return {
    openapi: "3.1.0",
    info: {
      title: "Tollgate Ethereum RPC Gateway",
      version: "1.0.0",
      description: `Pay-per-call HTTP gateway to live Ethereum JSON-RPC. ${pay.text ? `Pay per call with ${pay.text}, or use` : "Use"} an API-key plan. Every response is fetched fresh from the node.\n\nAPI-key plans: ${planWords}\n\nWhat is charged: ${CHARGING_RULE}`,
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    // MPP discovery (mppx/discovery): what the service is and where its docs are.
    "x-service-info": {
      categories: ["blockchain", "ethereum", "json-rpc", "data"],
      docs: {
        apiReference: `${serverUrl ?? ""}/openapi.json`,
        llms: `${serverUrl ?? ""}/llms.txt`,
        ...(serverUrl ? { homepage: serverUrl } : {}),
      },
    },
    tags: [
      {
        name: "chain",
        description: `Paid chain endpoints. Networks: ${NETWORKS.map((n) => n.name).join(", ")}.`,
      },
      {
        name: "credits",
        description:
          "Prepaid credits: bought with a payment (x402 `exact`, MPP `charge`), spent by API-key calls once the plan is spent.",
      },
      {
        name: "json-rpc",
        description:
          "JSON-RPC 2.0 for viem, ethers and web3.py unchanged: read methods relayed as sent, each priced.",
      },
      { name: "free", description: "Unauthenticated, not quota-counted." },
      {
        name: "account",
        description:
          "The account dashboard's JSON API (served by the dashboard, not the gateway): sign in with an Ethereum wallet (EIP-4361), create, list, revoke and replace API keys (a key is shown once), and usage against the plan.",
      },
    ],
    paths,
    components: components(pay.schemes),
  };
}
