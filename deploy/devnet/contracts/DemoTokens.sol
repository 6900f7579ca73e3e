// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {ERC721Enumerable} from "@openzeppelin/contracts/token/ERC721/extensions/ERC721Enumerable.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// ERC-721 Enumerable collection. Its Transfer event shares topic0 with ERC-20 Transfer
/// (the tokenId is indexed instead of the value being in data), which the gateway must tell apart.
contract DemoTokens is ERC721Enumerable, Ownable {
    constructor(address owner_) ERC721("Demo Tokens", "DNFT") Ownable(owner_) {}

    function mint(address to, uint256 tokenId) external onlyOwner {
        _mint(to, tokenId);
    }

    function _baseURI() internal pure override returns (string memory) {
        return "https://tollgate.invalid/dnft/";
    }
}
