// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

/// Known failure modes for revert-mapping tests (reason string, custom error, panic, bare revert)
/// next to calls that succeed, so a test can compare both on the same contract.
contract DemoReverter {
    error DemoError(uint256 code, string detail);

    event ValueSet(address indexed by, uint256 value);

    uint256 public value;

    function alwaysReverts() external pure {
        revert("Demo: always reverts");
    }

    function revertsWithCustomError() external pure {
        revert DemoError(42, "Demo: custom error");
    }

    /// Division by zero: Panic(uint256 0x12).
    function panics() external pure returns (uint256) {
        return _divide(1, 0);
    }

    function revertsWithoutReason() external pure {
        revert();
    }

    function _divide(uint256 a, uint256 b) private pure returns (uint256) {
        return a / b;
    }

    function ok() external pure returns (uint256) {
        return 42;
    }

    /// State-changing: estimateGas succeeds for non-zero input and reverts with a reason for zero.
    function setValue(uint256 newValue) external {
        require(newValue != 0, "Demo: zero value");
        value = newValue;
        emit ValueSet(msg.sender, newValue);
    }
}
