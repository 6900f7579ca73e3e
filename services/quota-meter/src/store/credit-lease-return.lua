-- Credit lease return: the gateway ended a credit lease and gives back what it did not use
-- (credit-lease-close.lua is loaded in front).
-- ARGV: 1 prefix, 2 lease id, 3 credits left (atomic units)
-- Reply: 1 returned now, 0 no such open lease.
return closeCreditLease(ARGV[1], ARGV[2], ARGV[3])
