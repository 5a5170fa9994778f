// @ts-check
/**
 * The page's browser storage: its keys, settings in localStorage, and JSON values in either storage.
 * Every access tolerates storage being disabled or full.
 */

export const STORAGE_KEYS = {
  token: "reins.token",
  stepMode: "reins.stepMode",
  sessionId: "reins.sessionId",
  /** The turn this tab is following: `{turnId, sessionId, lastSeq, message}` (sessionStorage). */
  turn: "reins.turn",
};

/**
 * A setting from localStorage ("" when absent or when storage is unavailable).
 * @param {string} key
 */
export function loadSetting(key) {
  try {
    return localStorage.getItem(key) ?? "";
  } catch {
    return "";
  }
}

/**
 * @param {string} key
 * @param {string} value
 */
export function saveSetting(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    // storage disabled: the setting lasts until the page is closed
  }
}

/**
 * @param {Storage} storage
 * @param {string} key
 * @returns {any}
 */
export function readJson(storage, key) {
  try {
    const text = storage.getItem(key);
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

/**
 * @param {Storage} storage
 * @param {string} key
 * @param {unknown} value
 */
export function writeJson(storage, key, value) {
  try {
    if (value === null) storage.removeItem(key);
    else storage.setItem(key, JSON.stringify(value));
  } catch {
    // storage full or disabled: reattach after reload will not work, everything else does
  }
}
