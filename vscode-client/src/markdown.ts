// Model text as Markdown for the transcript webview. Every model output is hostile input: raw
// HTML is off (it comes out escaped), images are off (the webview's CSP would block them
// anyway), and links keep only http(s) and mailto targets (markdown-it already drops
// javascript:, vbscript:, file: and data:). Pure: no `vscode`, so it is unit-tested.

import MarkdownIt from 'markdown-it';

const SAFE_LINK = /^(https?:|mailto:)/i;

const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });
md.disable(['image']);
md.validateLink = (url: string): boolean => SAFE_LINK.test(url.trim());

const defaultLinkOpen =
  md.renderer.rules.link_open ?? ((tokens, index, options, _env, self) => self.renderToken(tokens, index, options));
md.renderer.rules.link_open = (tokens, index, options, env, self) => {
  const token = tokens[index];
  if (token) {
    token.attrSet('rel', 'noopener noreferrer');
  }
  return defaultLinkOpen(tokens, index, options, env, self);
};

/** The view redraws every entry on each change (every 50 ms while a run streams): finished
 *  texts are rendered once and reused. */
const CACHE_LIMIT = 500;
const cache = new Map<string, string>();

/** Markdown → HTML with no raw HTML, no images and only http(s)/mailto links. */
export function renderMarkdown(text: string): string {
  const hit = cache.get(text);
  if (hit !== undefined) {
    return hit;
  }
  const html = md.render(text);
  cache.set(text, html);
  if (cache.size > CACHE_LIMIT) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) {
      cache.delete(oldest);
    }
  }
  return html;
}
