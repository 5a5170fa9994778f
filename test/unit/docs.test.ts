/**
 * The repository documents itself (docs/http-api.md, docs/events.md, docs/semantics.md): no file a
 * user gets with a clone may send them to a document outside it, and every relative link in the README
 * and docs/ must lead to a file of the repository and, with an `#anchor`, to a heading of that file
 * (GitHub's heading slugs).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CHECKED_PATHS = ["README.md", "docs", "src", "test", "bench", "examples"];

/** Built from parts so that this file does not mention what it forbids. */
const FORBIDDEN_MENTIONS = ["DESIGN" + ".md", "../" + "shared", "PROVIDERS" + ".md", "STYLE" + ".md"];

/** Tracked files under the checked paths, and new ones not yet added (ignored files excluded). */
function repositoryFiles(): string[] {
  const output = execFileSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ...CHECKED_PATHS],
    { cwd: REPOSITORY_ROOT, encoding: "utf8" },
  );
  const paths = output.split("\0").filter((path) => path !== "");
  return [...new Set(paths)].filter((path) => existsSync(join(REPOSITORY_ROOT, path)));
}

function markdownDocuments(): string[] {
  const docs = readdirSync(join(REPOSITORY_ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs];
}

/** The markdown without fenced code blocks and inline code spans, where links are not links. */
function proseOf(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "").replace(/\s/g, "-");
}

/** Every anchor a markdown file's headings give, numbered as GitHub numbers repeated ones. */
function headingAnchors(markdown: string): Set<string> {
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = githubSlug(match[1] ?? "");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

type Link = { source: string; target: string };

function relativeLinks(source: string): Link[] {
  const prose = proseOf(readFileSync(join(REPOSITORY_ROOT, source), "utf8"));
  const links: Link[] = [];
  for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = match[1] ?? "";
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not a repository file
    links.push({ source, target });
  }
  return links;
}

/** What is wrong with one link, or undefined when it leads where it says. */
function brokenReason({ source, target }: Link): string | undefined {
  const [pathPart = "", anchor] = target.split("#", 2);
  const path =
    pathPart === "" ? join(REPOSITORY_ROOT, source) : resolve(REPOSITORY_ROOT, dirname(source), pathPart);
  if (relative(REPOSITORY_ROOT, path).startsWith("..")) return "leads outside the repository";
  if (!existsSync(path)) return "names no file";
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(path).isDirectory() || !path.endsWith(".md"))
    return "has an anchor into a file that is not markdown";
  const anchors = headingAnchors(readFileSync(path, "utf8"));
  return anchors.has(decodeURIComponent(anchor))
    ? undefined
    : `names no heading of ${relative(REPOSITORY_ROOT, path)}`;
}

describe("the repository documents itself", () => {
  it("no README, doc, source, test, bench or example file mentions a document outside the repository", () => {
    const files = repositoryFiles();
    expect(files).toContain("docs/semantics.md");
    const offenders: string[] = [];
    for (const file of files) {
      const content = readFileSync(join(REPOSITORY_ROOT, file), "utf8");
      content.split("\n").forEach((line, index) => {
        for (const mention of FORBIDDEN_MENTIONS) {
          if (line.includes(mention)) offenders.push(`${file}:${index + 1}: ${line.trim()}`);
        }
      });
    }
    expect(offenders).toEqual([]);
  });

  it("every relative link in README.md and docs/*.md leads to an existing file and heading", () => {
    const links = markdownDocuments().flatMap(relativeLinks);
    expect(links.length).toBeGreaterThan(10);
    const broken = links.flatMap((link) => {
      const reason = brokenReason(link);
      return reason === undefined ? [] : [`${link.source}: (${link.target}) ${reason}`];
    });
    expect(broken).toEqual([]);
  });

  it("makes GitHub's anchors from headings", () => {
    expect(githubSlug("`POST /api/turns/:id/stream-token`")).toBe("post-apiturnsidstream-token");
    expect(githubSlug("Following a turn from a browser (EventSource)")).toBe(
      "following-a-turn-from-a-browser-eventsource",
    );
    expect(githubSlug("HTTP and SSE")).toBe("http-and-sse");
    expect([...headingAnchors("# A\n\n```\n# not a heading\n```\n## A\n")]).toEqual(["a", "a-1"]);
  });
});
