/**
 * How long a store write whose answer was lost waits for Redis to read back (or run again) what it
 * did: inside the gateway's Verify (10 s) and Settle (30 s) deadlines. Past it, the write fails as
 * before (503) and its clean-up waits for Redis.
 */
export const READ_BACK_MS = 5_000;
