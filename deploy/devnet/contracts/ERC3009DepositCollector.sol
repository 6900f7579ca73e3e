// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// EIP-3009 `receiveWithAuthorization` in its `bytes signature` form (FiatToken v2.2, DemoUSDC).
interface IERC3009Receive {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/// Our own deposit collector for the x402 `batch-settlement` scheme, with the published interface
/// the x402 EVM SDK uses at 0x4020806089470a89826cB9fB1f4059150b550004: the payer signs an
/// EIP-3009 ReceiveWithAuthorization to this contract with
/// nonce = keccak256(abi.encode(channelId, salt)), so the authorization is bound to one channel;
/// the settlement contract calls `collect`, which receives the tokens and forwards them to it.
///
/// Only the runtime code is used (placed with anvil_setCode), so the settlement contract it serves
/// is a constant: its canonical address.
contract ERC3009DepositCollector {
    using SafeERC20 for IERC20;

    /// The only caller allowed: otherwise anyone holding a payer's signed authorization could
    /// pull the payer's tokens here outside a deposit.
    address public constant x402BatchSettlement = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    error OnlyX402BatchSettlement();

    /// @param collectorData abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature)
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != x402BatchSettlement) revert OnlyX402BatchSettlement();
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        IERC3009Receive(token).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, keccak256(abi.encode(channelId, salt)), signature
        );
        IERC20(token).safeTransfer(msg.sender, amount);
    }
}
