// Traffic paced to a steady rate, so that a day's quota lasts across a fault: a client that takes
// its time between requests, which is the scenario, not a wait for a condition.

export const paced = (ms: number) => new Promise((r) => setTimeout(r, ms));
