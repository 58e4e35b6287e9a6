// Escaping for the webview's markup. Everything drawn there — model text, tool output, file
// names from the repository — is hostile input and passes through this.

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}
