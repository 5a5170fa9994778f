// @ts-check
/**
 * Assistant text as markdown: `marked` turns it into HTML, with any raw HTML in the text escaped (the
 * model's markup is shown, never interpreted), then DOMPurify sanitises the result before it reaches
 * the DOM, and every code block gets a Copy button. Both libraries are served from node_modules as ES
 * modules through the server's vendor allow-list (`/vendor/…`), so the CSP stays `script-src 'self'`.
 */
import DOMPurify from "/vendor/dompurify.js";
import { Marked } from "/vendor/marked.js";
import { element } from "./dom.js";

/** How long a Copy button says "Copied" before it reads "Copy" again. */
const COPIED_FEEDBACK_MS = 1_500;

/** @param {string} text */
function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const markdown = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // raw HTML in the model's text is shown as text, like everything else the model says
    html(/** @type {{text: string}} */ token) {
      return escapeHtml(token.text);
    },
  },
});

/**
 * A Copy button for one code block (the clipboard needs a secure context or localhost).
 * @param {HTMLElement} code
 */
function copyButton(code) {
  const button = element("button", {
    className: "small copy-code",
    testId: "copy-code",
    text: "Copy",
    attributes: { type: "button", "aria-label": "Copy this code" },
  });
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let resetTimer;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(code.textContent ?? "");
      button.textContent = "Copied";
    } catch {
      button.textContent = "Copy failed";
    }
    clearTimeout(resetTimer);
    resetTimer = setTimeout(() => (button.textContent = "Copy"), COPIED_FEEDBACK_MS);
  });
  return button;
}

/**
 * Renders `text` as sanitised markdown into `target`, replacing what it held.
 * @param {HTMLElement} target
 * @param {string} text
 */
export function renderMarkdown(target, text) {
  const html = /** @type {string} */ (markdown.parse(text, { async: false }));
  const fragment = DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true });
  // a link opens beside the chat: leaving this page would cut the stream of a running turn (a
  // disconnect, which aborts it), and the opened page gets no handle on this one
  for (const link of fragment.querySelectorAll("a[href]")) {
    link.setAttribute("target", "_blank");
    link.setAttribute("rel", "noopener noreferrer");
  }
  for (const pre of fragment.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    if (!code) continue;
    const block = element("div", { className: "code-block", testId: "code-block" });
    pre.replaceWith(block);
    block.append(copyButton(/** @type {HTMLElement} */ (code)), pre);
  }
  target.replaceChildren(fragment);
}
