/**
 * Ids of sessions, turns and tool calls: `<prefix>_` then the creation millisecond in 8 base-62
 * characters, then 12 random ones (crypto-strong, about 71 bits). An id made in a later millisecond
 * sorts after one made earlier, byte by byte (ids of one millisecond are in random order; a clock set
 * back makes ids that sort earlier, still unique), so a new session's or turn's rows land at the right
 * edge of every B-tree keyed by them (primary keys, the events', blocks' and trace rows' keys), where
 * SQLite appends to full pages, instead of on a random page mid-tree. The cost is that an id tells when
 * it was made (docs/decisions.md #15). `timePart` wraps after 62^8 ms (the year 8889).
 */
import { customAlphabet } from "nanoid";

/** In ASCII order, so that the time part of two ids compares as their times do. */
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const TIME_DIGITS = 8; // 62^8 ms is about 6,900 years from 1970
const RANDOM_LENGTH = 12;

const randomPart = customAlphabet(BASE62, RANDOM_LENGTH);

/** `ms` (a non-negative integer) in base 62, left-padded to TIME_DIGITS characters. */
export function timePart(ms: number): string {
  let rest = Math.max(0, Math.floor(ms));
  let digits = "";
  for (let index = 0; index < TIME_DIGITS; index++) {
    digits = BASE62.charAt(rest % 62) + digits;
    rest = Math.floor(rest / 62);
  }
  return digits;
}

/** A generator of time-ordered ids on the clock `now`. */
export function timeOrderedIds(now: () => number): (prefix: string) => string {
  let lastMs = -1;
  let lastTime = "";
  return (prefix) => {
    const ms = now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastTime = timePart(ms);
    }
    return `${prefix}_${lastTime}${randomPart()}`;
  };
}
