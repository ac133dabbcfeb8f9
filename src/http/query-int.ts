import { z } from 'zod';

// Query integers are plain decimal digits. z.coerce.number() reads "0x10", "1e1",
// "30.0" and " 5" as numbers, so one value had many spellings, each a way past a filter or a cache
// key that compares text. Leading zeros ("05") count as padding and are refused too: a number has
// exactly one spelling here.
const DIGITS = /^(0|[1-9][0-9]*)$/;

const message = 'must be a whole number in plain decimal digits (no sign, leading zero, point, exponent or space)';

/** An integer query member from min to max; absent, `fallback`. Documented as an integer. */
export const queryInt = (min: number, max: number, fallback: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && DIGITS.test(v) ? Number(v) : v),
    z.number({ error: (issue) => (issue.code === 'invalid_type' ? message : undefined) }).int().min(min).max(max).default(fallback),
  );
