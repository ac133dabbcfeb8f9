/** Time is a dependency, so tests can move it (a UTC day boundary, an expiry) without sleeping. */
export type Clock = () => Date;
export const systemClock: Clock = () => new Date();
