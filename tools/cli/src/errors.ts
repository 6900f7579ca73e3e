// The CLI's two ways to fail, told apart by the exit code: 2 for a command written wrong (with the
// usage text), 1 for one that could not be done.

/** The command line is wrong: exit 2, the usage text printed beside the message. */
export class UsageError extends Error {}

/** The command was right but did not succeed (no token, a service down, a refusal): exit 1. */
export class Failure extends Error {}
