// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

/// Pulls a deposit from the payer into the calling settlement contract (ERC-3009, Permit2, ...).
interface IDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external;
}

/// Our own escrow for the x402 `batch-settlement` scheme, written to the interface the official
/// x402 EVM SDK calls at 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003 (function names, argument
/// order, struct layouts, events, custom errors and EIP-712 types as published). A unidirectional
/// payment channel per `ChannelConfig`: the payer deposits once, signs cumulative vouchers off-chain,
/// the receiver side claims them in batches and sweeps claimed funds with `settle`; unclaimed
/// escrow goes back through a cooperative refund or, unilaterally, a timed withdrawal.
///
/// Only the runtime code is used: the devnet places it at the canonical address with
/// anvil_setCode, so there is no constructor state and no immutable. The EIP-712 domain separator
/// is computed per call from `block.chainid` and `address(this)`.
contract BatchSettlement is Multicall, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    struct ChannelConfig {
        address payer;
        /// EOA that signs vouchers (ECDSA only), or zero: vouchers are then checked against
        /// `payer` with SignatureChecker (EOA or ERC-1271 wallet).
        address payerAuthorizer;
        address receiver;
        /// Signs claim batches and refunds (EOA or ERC-1271); never zero.
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct ChannelState {
        /// Deposited minus refunded and withdrawn; claimed funds stay counted here.
        uint128 balance;
        /// Cumulative amount the receiver side has claimed (only ever grows).
        uint128 totalClaimed;
    }

    struct WithdrawalState {
        uint128 amount;
        /// Zero when no withdrawal is pending.
        uint40 initiatedAt;
    }

    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        /// Cumulative (not a delta), so a replayed claim is a no-op.
        uint128 totalClaimed;
    }

    uint40 public constant MIN_WITHDRAW_DELAY = 900; // 15 minutes
    uint40 public constant MAX_WITHDRAW_DELAY = 2_592_000; // 30 days

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    string private constant DOMAIN_NAME = "x402 Batch Settlement";
    string private constant DOMAIN_VERSION = "1";

    mapping(bytes32 channelId => ChannelState) public channels;
    /// Next nonce `refundWithSignature` accepts; every executed refund advances it.
    mapping(bytes32 channelId => uint256) public refundNonce;
    mapping(bytes32 channelId => WithdrawalState) public pendingWithdrawals;
    mapping(address receiver => mapping(address token => ReceiverState)) public receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    error InvalidChannel();
    error ZeroDeposit();
    error DepositOverflow();
    error InvalidSignature();
    error NotReceiverAuthorizer();
    error NotAuthorizedToClaim();
    error NotAuthorizedToRefund();
    error ClaimExceedsCeiling();
    error ClaimExceedsBalance();
    error WithdrawalAlreadyPending();
    error WithdrawalNotPending();
    error NotAuthorizedToFinalizeWithdraw();
    error WithdrawDelayNotElapsed();
    error NothingToWithdraw();
    error WithdrawAmountExceedsAvailable();
    error WithdrawDelayOutOfRange();
    error EmptyBatch();
    error DepositCollectionFailed();
    error InvalidCollector();
    error InvalidRefundNonce();
    error ZeroRefund();

    // ---- deposits ----

    /// Credits `amount` to the channel, pulled from the payer by `collector`. The balance check
    /// after the pull is the only trust placed in the collector: exactly `amount` must arrive.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        if (
            config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)
                || config.token == address(0)
        ) revert InvalidChannel();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange();
        }
        if (amount == 0) revert ZeroDeposit();
        if (collector == address(0)) revert InvalidCollector();

        bytes32 channelId = getChannelId(config);
        ChannelState storage ch = channels[channelId];
        uint128 before = ch.balance;
        if (amount > type(uint128).max - before) revert DepositOverflow();
        ch.balance = before + amount;

        IERC20 token = IERC20(config.token);
        uint256 held = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        if (token.balanceOf(address(this)) != held + amount) revert DepositCollectionFailed();

        if (before == 0 && ch.totalClaimed == 0) emit ChannelCreated(channelId, config);
        emit Deposited(channelId, msg.sender, amount, ch.balance);
    }

    // ---- claims and settlement ----

    /// Claims sent by the channel's receiver or receiverAuthorizer themselves.
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyBatch();
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            ChannelConfig calldata c = voucherClaims[i].voucher.channel;
            if (msg.sender != c.receiver && msg.sender != c.receiverAuthorizer) revert NotAuthorizedToClaim();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// Claims relayed by anyone (the facilitator) with the receiverAuthorizer's EIP-712 signature
    /// over the whole batch; every row must name that same receiverAuthorizer.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        if (!SignatureChecker.isValidSignatureNow(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) {
            revert InvalidSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert NotReceiverAuthorizer();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// Sends everything claimed but not yet settled for (receiver, token) to the receiver.
    /// Permissionless; a no-op when nothing is due.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverState storage r = receivers[receiver][token];
        uint128 due = r.totalClaimed - r.totalSettled;
        if (due == 0) return;
        r.totalSettled = r.totalClaimed;
        IERC20(token).safeTransfer(receiver, due);
        emit Settled(receiver, token, msg.sender, due);
    }

    // ---- cooperative refund ----

    /// Refund sent by the channel's receiver or receiverAuthorizer themselves.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) revert NotAuthorizedToRefund();
        _refund(config, getChannelId(config), amount);
    }

    /// Refund relayed by anyone with the receiverAuthorizer's signature over (channelId, nonce,
    /// amount); `nonce` must be the current `refundNonce`, so a signature works once.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        if (nonce != refundNonce[channelId]) revert InvalidRefundNonce();
        if (
            !SignatureChecker.isValidSignatureNow(
                config.receiverAuthorizer, getRefundDigest(channelId, nonce, amount), receiverAuthorizerSignature
            )
        ) revert InvalidSignature();
        _refund(config, channelId, amount);
    }

    // ---- timed withdrawal (the payer's exit without the receiver's cooperation) ----

    /// Announces a withdrawal of at most the unclaimed escrow; the receiver side has
    /// `withdrawDelay` seconds to claim outstanding vouchers before it can be finalized.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) revert InvalidChannel();
        if (amount == 0) revert NothingToWithdraw();
        bytes32 channelId = getChannelId(config);
        WithdrawalState storage w = pendingWithdrawals[channelId];
        if (w.initiatedAt != 0) revert WithdrawalAlreadyPending();
        ChannelState storage ch = channels[channelId];
        if (amount > ch.balance - ch.totalClaimed) revert WithdrawAmountExceedsAvailable();
        uint40 now40 = uint40(block.timestamp);
        w.amount = amount;
        w.initiatedAt = now40;
        emit WithdrawInitiated(channelId, amount, now40 + config.withdrawDelay);
    }

    /// Pays out a pending withdrawal once its delay has passed, capped at what is still unclaimed.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) {
            revert NotAuthorizedToFinalizeWithdraw();
        }
        bytes32 channelId = getChannelId(config);
        WithdrawalState storage w = pendingWithdrawals[channelId];
        uint40 initiatedAt = w.initiatedAt;
        if (initiatedAt == 0) revert WithdrawalNotPending();
        if (block.timestamp < uint256(initiatedAt) + config.withdrawDelay) revert WithdrawDelayNotElapsed();

        ChannelState storage ch = channels[channelId];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 payout = w.amount < available ? w.amount : available;
        delete pendingWithdrawals[channelId];
        ch.balance -= payout;

        emit WithdrawFinalized(channelId, msg.sender, payout);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(channelId, config);
        if (payout > 0) IERC20(config.token).safeTransfer(config.payer, payout);
    }

    // ---- EIP-712 views ----

    /// channelId = EIP-712 hash of the config under this contract's domain (chain and address bound).
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _typedData(keccak256(abi.encode(CHANNEL_CONFIG_TYPEHASH, config)));
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _typedData(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _typedData(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// EIP-712 `ClaimBatch`: the array member hashes to keccak256 of the concatenated entry hashes.
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            VoucherClaim calldata vc = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH, getChannelId(vc.voucher.channel), vc.voucher.maxClaimableAmount, vc.totalClaimed
                )
            );
        }
        return _typedData(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    /// ERC-5267 domain description (what wallets and viem's getEip712Domain read).
    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory name,
            string memory version,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        return (hex"0f", DOMAIN_NAME, DOMAIN_VERSION, block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    // ---- internals ----

    /// Raises the channel's claimed total to `vc.totalClaimed`, within the signed ceiling and the
    /// escrow; a total at or below what is already claimed changes nothing (replays are harmless).
    function _applyClaim(VoucherClaim calldata vc) private {
        ChannelConfig calldata c = vc.voucher.channel;
        bytes32 channelId = getChannelId(c);
        ChannelState storage ch = channels[channelId];
        uint128 claimed = ch.totalClaimed;
        if (vc.totalClaimed <= claimed) return;
        if (vc.totalClaimed > vc.voucher.maxClaimableAmount) revert ClaimExceedsCeiling();
        if (vc.totalClaimed > ch.balance) revert ClaimExceedsBalance();

        bytes32 digest = getVoucherDigest(channelId, vc.voucher.maxClaimableAmount);
        bool signed;
        if (c.payerAuthorizer != address(0)) {
            (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, vc.signature);
            signed = err == ECDSA.RecoverError.NoError && recovered == c.payerAuthorizer;
        } else {
            signed = SignatureChecker.isValidSignatureNow(c.payer, digest, vc.signature);
        }
        if (!signed) revert InvalidSignature();

        uint128 delta = vc.totalClaimed - claimed;
        ch.totalClaimed = vc.totalClaimed;
        receivers[c.receiver][c.token].totalClaimed += delta;
        emit Claimed(channelId, msg.sender, delta, vc.totalClaimed);
    }

    /// Shared by both refund paths. The nonce advances first, even when nothing is left to refund,
    /// so any refund signature for the previous nonce is spent.
    function _refund(ChannelConfig calldata config, bytes32 channelId, uint128 amount) private {
        if (amount == 0) revert ZeroRefund();
        unchecked {
            ++refundNonce[channelId];
        }
        ChannelState storage ch = channels[channelId];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 payout = amount < available ? amount : available;
        if (payout == 0) return;
        ch.balance -= payout;

        // A refund also serves a pending withdrawal: shrink it, or drop it once covered.
        WithdrawalState storage w = pendingWithdrawals[channelId];
        if (w.initiatedAt != 0) {
            if (payout >= w.amount) delete pendingWithdrawals[channelId];
            else w.amount -= payout;
        }

        emit Refunded(channelId, msg.sender, payout);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(channelId, config);
        IERC20(config.token).safeTransfer(config.payer, payout);
    }

    function _typedData(bytes32 structHash) private view returns (bytes32) {
        bytes32 domainSeparator = keccak256(
            abi.encode(
                DOMAIN_TYPEHASH,
                keccak256(bytes(DOMAIN_NAME)),
                keccak256(bytes(DOMAIN_VERSION)),
                block.chainid,
                address(this)
            )
        );
        return MessageHashUtils.toTypedDataHash(domainSeparator, structHash);
    }
}
