// nft-metadata decodes metadata stored on chain (data: URIs) and never fetches anything else.
import { describe, expect, it } from "vitest";
import { jsonFromDataUri } from "../../services/rpc-proxy/src/operations/data-uri.ts";

describe("on-chain NFT metadata (data: URIs)", () => {
  const json = { name: "Token #1", image: "data:image/svg+xml;base64,PHN2Zy8+", attributes: [{ v: 1 }] };

  it("decodes base64, percent-encoded and raw JSON objects", () => {
    const text = JSON.stringify(json);
    expect(jsonFromDataUri(`data:application/json;base64,${Buffer.from(text).toString("base64")}`)).toEqual(
      json,
    );
    expect(jsonFromDataUri(`data:application/json,${encodeURIComponent(text)}`)).toEqual(json);
    expect(jsonFromDataUri(`data:application/json;utf8,${text}`)).toEqual(json);
    expect(jsonFromDataUri(`data:application/json;utf8,{"name":"100% on chain"}`)).toEqual({
      name: "100% on chain",
    });
  });

  it("is null for off-chain URIs, other media types, and text that is not a JSON object", () => {
    for (const uri of [
      "https://example.com/1.json",
      "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/1",
      "data:text/plain,hello",
      "data:application/json,[1,2]",
      "data:application/json,not json",
      "data:application/json;base64,!!!",
    ]) {
      expect(jsonFromDataUri(uri), uri).toBeNull();
    }
  });
});
