/**
 * Takes the owner setup secret out of a `#setup=…` link and removes it from the address bar, so it does not
 * linger in history, bookmarks or screenshots. Called once, before the first render.
 */
export function takeSetupSecretFromHash(): string {
  const hash = window.location.hash;
  if (!hash.startsWith('#setup=')) return '';
  let secret: string;
  try {
    secret = decodeURIComponent(hash.slice('#setup='.length)).trim();
  } catch {
    secret = hash.slice('#setup='.length).trim();
  }
  window.history.replaceState(window.history.state, '', window.location.pathname + window.location.search);
  return secret;
}
