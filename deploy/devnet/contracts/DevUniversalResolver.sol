// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

interface IENSRegistryView {
    function resolver(bytes32 node) external view returns (address);
}

interface IAddrResolverView {
    function addr(bytes32 node) external view returns (address);
}

interface INameResolverView {
    function name(bytes32 node) external view returns (string memory);
}

/// Minimal stand-in for the ENS Universal Resolver: the entry points viem's getEnsAddress,
/// getEnsName, getEnsText and getEnsResolver call, without wildcard (ENSIP-10) resolution or
/// CCIP-read (the gateway list is accepted and ignored).
/// The registry address is an immutable so that the runtime code can be copied to the
/// canonical universal-resolver address with anvil_setCode and work without storage.
/// Failures use the same custom errors as the real contract, which viem maps to `null`.
contract DevUniversalResolver {
    error DNSDecodingFailed(bytes dns);
    error ResolverNotFound(bytes name);
    error ResolverNotContract(bytes name, address resolver);
    error ResolverError(bytes errorData);
    error ReverseAddressMismatch(string primary, bytes primaryAddress);
    error UnsupportedResolverProfile(bytes4 selector);

    /// namehash("addr.reverse")
    bytes32 private constant ADDR_REVERSE_NODE = 0x91d1777781884d03a6757a803996e38de2a42967fb37eeaca72729271025a9e2;
    uint256 private constant COIN_TYPE_ETH = 60;

    address public immutable registry;

    constructor(address registry_) {
        registry = registry_;
    }

    /// `name` is DNS wire format; `data` is the resolver calldata (e.g. addr(bytes32)).
    function resolveWithGateways(bytes calldata name, bytes calldata data, string[] calldata)
        external
        view
        returns (bytes memory, address)
    {
        return resolve(name, data);
    }

    function resolve(bytes calldata name, bytes calldata data) public view returns (bytes memory result, address resolver) {
        resolver = _resolverOf(_namehashDns(name, 0), name);
        bool success;
        (success, result) = resolver.staticcall(data);
        if (!success) revert ResolverError(result);
    }

    /// Resolver of `name` or of its closest ancestor that has one (what viem's getEnsResolver calls);
    /// `offset` is where the matched suffix starts in the DNS-encoded name.
    function findResolver(bytes calldata name) external view returns (address resolver, bytes32 node, uint256 offset) {
        node = _namehashDns(name, 0);
        while (offset < name.length && uint8(name[offset]) != 0) {
            resolver = IENSRegistryView(registry).resolver(_namehashDns(name, offset));
            if (resolver != address(0)) return (resolver, node, offset);
            offset += 1 + uint8(name[offset]);
        }
        return (address(0), node, offset);
    }

    /// `lookupAddress` is the raw 20-byte address. Returns the primary name only if it resolves
    /// forward to the same address, as ENSIP-19 requires.
    function reverseWithGateways(bytes calldata lookupAddress, uint256 coinType, string[] calldata)
        external
        view
        returns (string memory primary, address resolver, address reverseResolver)
    {
        if (coinType != COIN_TYPE_ETH) revert UnsupportedResolverProfile(INameResolverView.name.selector);
        if (lookupAddress.length != 20) revert ResolverError(lookupAddress);

        bytes memory hexLabel = _lowerHex(lookupAddress);
        bytes32 reverseNode = keccak256(abi.encodePacked(ADDR_REVERSE_NODE, keccak256(hexLabel)));
        bytes memory reverseDns = abi.encodePacked(uint8(40), hexLabel, uint8(4), "addr", uint8(7), "reverse", uint8(0));
        reverseResolver = _resolverOf(reverseNode, reverseDns);

        primary = INameResolverView(reverseResolver).name(reverseNode);
        if (bytes(primary).length == 0) return (primary, address(0), reverseResolver);

        bytes32 node = _namehashDotted(bytes(primary));
        resolver = _resolverOf(node, bytes(primary));
        address forward = IAddrResolverView(resolver).addr(node);
        if (keccak256(abi.encodePacked(forward)) != keccak256(lookupAddress)) {
            revert ReverseAddressMismatch(primary, abi.encodePacked(forward));
        }
    }

    function _resolverOf(bytes32 node, bytes memory name) private view returns (address resolver) {
        resolver = IENSRegistryView(registry).resolver(node);
        if (resolver == address(0)) revert ResolverNotFound(name);
        if (resolver.code.length == 0) revert ResolverNotContract(name, resolver);
    }

    /// namehash of a DNS-encoded name: length-prefixed labels ending with a zero byte.
    function _namehashDns(bytes calldata name, uint256 offset) private pure returns (bytes32) {
        if (offset >= name.length) revert DNSDecodingFailed(name);
        uint256 len = uint8(name[offset]);
        if (len == 0) return bytes32(0);
        uint256 end = offset + 1 + len;
        if (end > name.length) revert DNSDecodingFailed(name);
        bytes32 parent = _namehashDns(name, end);
        return keccak256(abi.encodePacked(parent, keccak256(name[offset + 1:end])));
    }

    /// namehash of a dotted name such as "demo.eth", hashing labels from the right.
    function _namehashDotted(bytes memory name) private pure returns (bytes32 node) {
        uint256 end = name.length;
        for (uint256 i = name.length; i > 0; --i) {
            if (name[i - 1] == ".") {
                node = keccak256(abi.encodePacked(node, _keccakRange(name, i, end - i)));
                end = i - 1;
            }
        }
        if (end > 0) node = keccak256(abi.encodePacked(node, _keccakRange(name, 0, end)));
    }

    function _keccakRange(bytes memory data, uint256 start, uint256 len) private pure returns (bytes32 hash) {
        assembly {
            hash := keccak256(add(add(data, 32), start), len)
        }
    }

    function _lowerHex(bytes calldata data) private pure returns (bytes memory out) {
        bytes16 digits = "0123456789abcdef";
        out = new bytes(data.length * 2);
        for (uint256 i = 0; i < data.length; ++i) {
            out[2 * i] = digits[uint8(data[i]) >> 4];
            out[2 * i + 1] = digits[uint8(data[i]) & 0x0f];
        }
    }
}
