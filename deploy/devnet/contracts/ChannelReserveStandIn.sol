// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// The token calls the stand-in needs (TIP-20 tokens are ERC-20 compatible).
interface ITip20Minimal {
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// Devnet stand-in for Tempo's TIP-1034 channel reserve precompile
/// (0x4d50500000000000000000000000000000000000), which anvil's Tempo T4 does not have. It has the
/// precompile's ABI, events, errors, channel ids and EIP-712 vouchers, so the unmodified mppx server
/// and client run sessions against it. Its runtime code is placed at the canonical address with
/// anvil_setCode (no constructor runs, so nothing lives in immutables).
///
/// Deviations a contract cannot avoid (the devnet README lists them):
/// - Deposits move with `transferFrom`, so the payer must `approve` this address first; the real
///   precompile pulls by privilege.
/// - The precompile reads the opening transaction's `expiringNonceHash` from the transaction
///   context. A contract cannot see it, so the devnet's JSON-RPC shim computes it from the raw open
///   transaction and writes it into `_pendingNonceHash` (slot 1, keyed by keccak256(payer, salt))
///   with anvil_setStorageAt just before broadcasting; `open` consumes and clears it.
/// - Vouchers are checked with ecrecover (secp256k1 only); the precompile also takes P256/WebAuthn.
contract ChannelReserveStandIn {
    struct ChannelDescriptor {
        address payer;
        address payee;
        address operator;
        address token;
        bytes32 salt;
        address authorizedSigner;
        bytes32 expiringNonceHash;
    }

    struct ChannelState {
        uint96 settled;
        uint96 deposit;
        uint32 closeRequestedAt;
    }

    struct Channel {
        ChannelDescriptor descriptor;
        ChannelState state;
    }

    event ChannelOpened(
        bytes32 indexed channelId,
        address indexed payer,
        address indexed payee,
        address operator,
        address token,
        address authorizedSigner,
        bytes32 salt,
        bytes32 expiringNonceHash,
        uint96 deposit
    );
    event Settled(
        bytes32 indexed channelId,
        address indexed payer,
        address indexed payee,
        uint96 cumulativeAmount,
        uint96 deltaPaid,
        uint96 newSettled
    );
    event TopUp(
        bytes32 indexed channelId, address indexed payer, address indexed payee, uint96 additionalDeposit, uint96 newDeposit
    );
    event CloseRequested(bytes32 indexed channelId, address indexed payer, address indexed payee, uint256 closeGraceEnd);
    event ChannelClosed(
        bytes32 indexed channelId, address indexed payer, address indexed payee, uint96 settledToPayee, uint96 refundedToPayer
    );
    event CloseRequestCancelled(bytes32 indexed channelId, address indexed payer, address indexed payee);

    error ChannelAlreadyExists();
    error ChannelNotFound();
    error NotPayer();
    error NotPayeeOrOperator();
    error InvalidPayee();
    error ZeroDeposit();
    error ExpiringNonceHashNotSet();
    error InvalidSignature();
    error AmountExceedsDeposit();
    error AmountNotIncreasing();
    error CaptureAmountInvalid();
    error CloseNotReady();
    error DepositOverflow();
    error TokenTransferFailed();

    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint96 cumulativeAmount)");
    uint64 public constant CLOSE_GRACE_PERIOD = 15 minutes;

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    /// TIP-20 tokens live at addresses with this 12-byte prefix; they cannot be payees.
    uint160 private constant TIP20_PREFIX = uint160(0x20c000000000000000000000) << 64;
    uint160 private constant TIP20_PREFIX_MASK = type(uint160).max << 64;

    /// Slot 0: channel id => packed state (settled | deposit << 96 | closeRequestedAt << 192); 0 = none.
    mapping(bytes32 channelId => uint256 packed) private _channels;
    /// Slot 1: keccak256(abi.encode(payer, salt)) => expiringNonceHash of the pending open (see above).
    mapping(bytes32 openKey => bytes32 expiringNonceHash) private _pendingNonceHash;

    function open(address payee, address operator, address token, uint96 deposit, bytes32 salt, address authorizedSigner)
        external
        returns (bytes32 channelId)
    {
        if (payee == address(0) || (uint160(payee) & TIP20_PREFIX_MASK) == TIP20_PREFIX) revert InvalidPayee();
        if (deposit == 0) revert ZeroDeposit();
        bytes32 openKey = keccak256(abi.encode(msg.sender, salt));
        bytes32 nonceHash = _pendingNonceHash[openKey];
        if (nonceHash == bytes32(0)) revert ExpiringNonceHashNotSet();
        delete _pendingNonceHash[openKey];

        channelId = computeChannelId(msg.sender, payee, operator, token, salt, authorizedSigner, nonceHash);
        if (_channels[channelId] != 0) revert ChannelAlreadyExists();
        _channels[channelId] = _pack(ChannelState({settled: 0, deposit: deposit, closeRequestedAt: 0}));
        _pull(token, msg.sender, deposit);
        emit ChannelOpened(channelId, msg.sender, payee, operator, token, authorizedSigner, salt, nonceHash, deposit);
    }

    function settle(ChannelDescriptor calldata d, uint96 cumulativeAmount, bytes calldata signature) external {
        bytes32 channelId = _idOf(d);
        ChannelState memory s = _load(channelId);
        _onlyPayeeOrOperator(d);
        if (cumulativeAmount > s.deposit) revert AmountExceedsDeposit();
        if (cumulativeAmount <= s.settled) revert AmountNotIncreasing();
        _checkVoucher(d, channelId, cumulativeAmount, signature);

        uint96 delta = cumulativeAmount - s.settled;
        s.settled = cumulativeAmount;
        _channels[channelId] = _pack(s);
        _push(d.token, d.payee, delta);
        emit Settled(channelId, d.payer, d.payee, cumulativeAmount, delta, cumulativeAmount);
    }

    function topUp(ChannelDescriptor calldata d, uint96 additionalDeposit) external {
        bytes32 channelId = _idOf(d);
        ChannelState memory s = _load(channelId);
        if (msg.sender != d.payer) revert NotPayer();
        if (additionalDeposit > type(uint96).max - s.deposit) revert DepositOverflow();
        s.deposit += additionalDeposit;
        bool cancelled = s.closeRequestedAt != 0;
        s.closeRequestedAt = 0;
        _channels[channelId] = _pack(s);
        if (additionalDeposit > 0) _pull(d.token, msg.sender, additionalDeposit);
        if (cancelled) emit CloseRequestCancelled(channelId, d.payer, d.payee);
        emit TopUp(channelId, d.payer, d.payee, additionalDeposit, s.deposit);
    }

    function requestClose(ChannelDescriptor calldata d) external {
        bytes32 channelId = _idOf(d);
        ChannelState memory s = _load(channelId);
        if (msg.sender != d.payer) revert NotPayer();
        if (s.closeRequestedAt != 0) return;
        s.closeRequestedAt = uint32(block.timestamp);
        _channels[channelId] = _pack(s);
        emit CloseRequested(channelId, d.payer, d.payee, block.timestamp + CLOSE_GRACE_PERIOD);
    }

    /// Pays the payee `captureAmount - settled` (needs a voucher for at least `cumulativeAmount`
    /// when anything is captured) and refunds the rest of the deposit to the payer.
    function close(ChannelDescriptor calldata d, uint96 cumulativeAmount, uint96 captureAmount, bytes calldata signature)
        external
    {
        bytes32 channelId = _idOf(d);
        ChannelState memory s = _load(channelId);
        _onlyPayeeOrOperator(d);
        if (captureAmount < s.settled || captureAmount > cumulativeAmount) revert CaptureAmountInvalid();
        if (captureAmount > s.deposit) revert AmountExceedsDeposit();
        if (captureAmount > s.settled) _checkVoucher(d, channelId, cumulativeAmount, signature);

        uint96 delta = captureAmount - s.settled;
        uint96 refund = s.deposit - captureAmount;
        delete _channels[channelId];
        if (delta > 0) _push(d.token, d.payee, delta);
        if (refund > 0) _push(d.token, d.payer, refund);
        emit ChannelClosed(channelId, d.payer, d.payee, captureAmount, refund);
    }

    function withdraw(ChannelDescriptor calldata d) external {
        bytes32 channelId = _idOf(d);
        ChannelState memory s = _load(channelId);
        if (msg.sender != d.payer) revert NotPayer();
        if (s.closeRequestedAt == 0 || block.timestamp < uint256(s.closeRequestedAt) + CLOSE_GRACE_PERIOD) {
            revert CloseNotReady();
        }
        uint96 refund = s.deposit - s.settled;
        delete _channels[channelId];
        if (refund > 0) _push(d.token, d.payer, refund);
        emit ChannelClosed(channelId, d.payer, d.payee, s.settled, refund);
    }

    function getChannel(ChannelDescriptor calldata d) external view returns (Channel memory channel) {
        channel.descriptor = d;
        channel.state = _unpack(_channels[_idOf(d)]);
    }

    function getChannelState(bytes32 channelId) external view returns (ChannelState memory) {
        return _unpack(_channels[channelId]);
    }

    function getChannelStatesBatch(bytes32[] calldata channelIds) external view returns (ChannelState[] memory states) {
        states = new ChannelState[](channelIds.length);
        for (uint256 i = 0; i < channelIds.length; ++i) {
            states[i] = _unpack(_channels[channelIds[i]]);
        }
    }

    function computeChannelId(
        address payer,
        address payee,
        address operator,
        address token,
        bytes32 salt,
        address authorizedSigner,
        bytes32 expiringNonceHash
    ) public view returns (bytes32) {
        return keccak256(
            abi.encode(
                payer, payee, operator, token, salt, authorizedSigner, expiringNonceHash, address(this), block.chainid
            )
        );
    }

    function getVoucherDigest(bytes32 channelId, uint96 cumulativeAmount) public view returns (bytes32) {
        bytes32 structHash = keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, cumulativeAmount));
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    function domainSeparator() public view returns (bytes32) {
        return keccak256(
            abi.encode(
                DOMAIN_TYPEHASH, keccak256("TIP20 Channel Reserve"), keccak256("1"), block.chainid, address(this)
            )
        );
    }

    /// The precompile charges new channels against per-payer storage credits; the stand-in has none.
    function storageCredits(address) external pure returns (uint64) {
        return 0;
    }

    function _idOf(ChannelDescriptor calldata d) private view returns (bytes32) {
        return computeChannelId(d.payer, d.payee, d.operator, d.token, d.salt, d.authorizedSigner, d.expiringNonceHash);
    }

    function _load(bytes32 channelId) private view returns (ChannelState memory) {
        uint256 packed = _channels[channelId];
        if (packed == 0) revert ChannelNotFound();
        return _unpack(packed);
    }

    function _onlyPayeeOrOperator(ChannelDescriptor calldata d) private view {
        if (msg.sender == d.payee) return;
        if (d.operator != address(0) && msg.sender == d.operator) return;
        revert NotPayeeOrOperator();
    }

    function _checkVoucher(ChannelDescriptor calldata d, bytes32 channelId, uint96 amount, bytes calldata signature)
        private
        view
    {
        if (signature.length != 65) revert InvalidSignature();
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27; // yParity (0/1) as well as v (27/28)
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(getVoucherDigest(channelId, amount), v, r, s);
        address expected = d.authorizedSigner == address(0) ? d.payer : d.authorizedSigner;
        if (err != ECDSA.RecoverError.NoError || signer != expected) revert InvalidSignature();
    }

    function _pull(address token, address from, uint96 amount) private {
        if (!ITip20Minimal(token).transferFrom(from, address(this), amount)) revert TokenTransferFailed();
    }

    function _push(address token, address to, uint96 amount) private {
        if (!ITip20Minimal(token).transfer(to, amount)) revert TokenTransferFailed();
    }

    function _pack(ChannelState memory s) private pure returns (uint256) {
        return uint256(s.settled) | (uint256(s.deposit) << 96) | (uint256(s.closeRequestedAt) << 192);
    }

    function _unpack(uint256 packed) private pure returns (ChannelState memory s) {
        s.settled = uint96(packed);
        s.deposit = uint96(packed >> 96);
        s.closeRequestedAt = uint32(packed >> 192);
    }
}
