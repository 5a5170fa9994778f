// @ts-check
/** The connection banner under the top bar: reattaching after a drop, or an action that failed. */
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
