// @ts-check
/**
 * The server's clock as the page sees it. Event `at` values are the server's epoch ms; the smallest
 * (local now − at) seen is the offset plus the shortest delivery delay, which is as close to the
 * server's "now" as we can get. Elapsed times and pause countdowns are computed from it, so a browser
 * clock that is off does not skew them.
 */

let serverOffsetMs = Number.POSITIVE_INFINITY;

/** @param {number} at a server time from an event */
export function observeServerTime(at) {
  if (Number.isFinite(at)) serverOffsetMs = Math.min(serverOffsetMs, Date.now() - at);
}

/** The server's current time, as well as the page can estimate it. */
export function serverNow() {
  return Date.now() - (Number.isFinite(serverOffsetMs) ? serverOffsetMs : 0);
}

/**
 * The current offset estimate (local − server ms), or null before any event was seen.
 * @returns {number | null}
 */
export function serverOffsetEstimate() {
  return Number.isFinite(serverOffsetMs) ? serverOffsetMs : null;
}

/**
 * Restores an estimate saved before a reload (the replay after a reload is old news and would
 * otherwise be the only evidence).
 * @param {number} offsetMs
 */
export function restoreServerOffset(offsetMs) {
  serverOffsetMs = offsetMs;
}
