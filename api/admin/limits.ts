// Limits of the admin procedures that wsctl states in its own option checks
// (cli/commands/*.ts): one value for both, so the CLI's message and the
// server's agree. Constants only: the CLI imports this file.

/** Seats a company's team may have (`wsctl company create|update --max-team-size`). */
export const MAX_TEAM_SIZE = 10_000;
