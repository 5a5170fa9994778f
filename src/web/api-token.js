// @ts-check
/**
 * The API token: the field under “API token” (kept in localStorage, sent as `Authorization: Bearer …`)
 * and the banner a 401 shows, saying whether the token is missing or was rejected.
 */
import { byTestId } from "./dom.js";
import { STORAGE_KEYS, loadSetting, saveSetting } from "./storage.js";

const tokenInput = /** @type {HTMLInputElement} */ (byTestId("token-input"));
const authError = byTestId("auth-error");
const settings = /** @type {HTMLDetailsElement} */ (byTestId("settings"));

/** The token in the field, trimmed ("" when none). */
export function currentToken() {
  return tokenInput.value.trim();
}

/**
 * Shows the 401 banner and opens the token field.
 * @param {string} serverMessage
 */
export function showAuthError(serverMessage) {
  const hasToken = currentToken() !== "";
  authError.textContent = hasToken
    ? `The server rejected the API token (401 unauthorized: ${serverMessage}). Check the token under “API token” and try again.`
    : `This server needs an API token (401 unauthorized: ${serverMessage}). Enter it under “API token” and try again.`;
  authError.hidden = false;
  settings.open = true;
}

export function clearAuthError() {
  authError.hidden = true;
  authError.textContent = "";
}

/**
 * Fills the field from localStorage and keeps it there as it is typed; saving the form also clears
 * the banner, closes the field and calls `onSaved`.
 * @param {() => void} onSaved
 */
export function setUpTokenForm(onSaved) {
  tokenInput.value = loadSetting(STORAGE_KEYS.token);
  tokenInput.addEventListener("input", () => saveSetting(STORAGE_KEYS.token, currentToken()));
  byTestId("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    saveSetting(STORAGE_KEYS.token, currentToken());
    clearAuthError();
    settings.open = false;
    onSaved();
  });
}
