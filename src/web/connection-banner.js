// @ts-check
/**
 * The banners under the top bar: the connection banner (reattaching after a drop, an action that
 * failed) and the unreachable banner — shown while requests cannot reach the server at all, with a
 * Retry button that runs the page's `onRetry` and hides once a request gets through.
 */
import { byTestId } from "./dom.js";

const connectionBanner = byTestId("connection");

/**
 * Shows `text` in the banner; "" hides it.
 * @param {string} text
 */
export function showConnection(text) {
  connectionBanner.textContent = text;
  connectionBanner.hidden = text === "";
}

const unreachableBanner = byTestId("unreachable");
/** @type {() => void} */
let retryHandler = () => {};

/**
 * Shows or hides the unreachable banner.
 * @param {boolean} unreachable
 */
export function showUnreachable(unreachable) {
  unreachableBanner.hidden = !unreachable;
}

/** Whether the page last found the server unreachable. */
export function serverUnreachable() {
  return !unreachableBanner.hidden;
}

/**
 * Wires Retry: `onRetry` fetches again what the page shows.
 * @param {() => void} onRetry
 */
export function setUpRetry(onRetry) {
  retryHandler = onRetry;
  byTestId("retry").addEventListener("click", () => retryHandler());
}
