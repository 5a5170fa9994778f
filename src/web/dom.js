// @ts-check
/**
 * DOM helpers of the webchat page: looking up the page's fixed elements by `data-testid`, creating
 * elements whose text is only ever set through `textContent`/`append(string)` (never parsed as HTML),
 * and keeping the view at the bottom while the reader follows the conversation.
 */

/**
 * The page element with `data-testid="<testId>"`; throws when the page lacks it.
 * @param {string} testId
 * @returns {HTMLElement}
 */
export function byTestId(testId) {
  const element = document.querySelector(`[data-testid="${testId}"]`);
  if (!(element instanceof HTMLElement)) throw new Error(`page is missing [data-testid="${testId}"]`);
  return element;
}

/**
 * Creates an element. Text is always set through `textContent`/`append`, so it is never parsed as HTML.
 * @param {string} tag
 * @param {{className?: string, testId?: string, text?: string, attributes?: Record<string, string>}} [options]
 * @param {(Node | string)[]} children
 * @returns {HTMLElement}
 */
export function element(tag, options = {}, ...children) {
  const node = document.createElement(tag);
  if (options.className) node.className = options.className;
  if (options.testId) node.dataset.testid = options.testId;
  if (options.text !== undefined) node.textContent = options.text;
  for (const [name, value] of Object.entries(options.attributes ?? {})) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** Scrolls to the end of the page when the reader is already near it (following the conversation). */
export function scrollToEndIfFollowing() {
  const nearBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 160;
  if (nearBottom) window.scrollTo({ top: document.documentElement.scrollHeight });
}
