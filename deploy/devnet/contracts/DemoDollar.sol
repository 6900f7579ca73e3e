// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// Plain 18-decimal ERC-20 whose seeded history (mints, transfers, approvals) the gateway tests replay.
contract DemoDollar is ERC20, Ownable {
    constructor(address owner_) ERC20("Demo Dollar", "DEMO") Ownable(owner_) {}

    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}
