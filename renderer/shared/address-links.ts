/**
 * Links that carry a secret in the address's hash: the owner setup link (`#setup=<secret>`, printed by the host)
 * and the sign-up link (`#signup=<invite code>`, made on the Host screen). The secret is taken out of the address
 * bar as soon as it is read, so it does not linger in history, bookmarks or screenshots. Links are read when the
 * page loads and whenever the address changes after that (a link pasted into an open tab).
 */
export type AddressLink = { kind: 'setup'; secret: string } | { kind: 'signup'; code: string };

const PREFIXES = { setup: '#setup=', signup: '#signup=' } as const;

function decoded(raw: string): string {
  try {
    return decodeURIComponent(raw).trim();
  } catch {
    return raw.trim();
  }
}

/** The link in `hash`, or null when it holds none (a screen's `#/…`, nothing, or an empty secret). */
export function parseAddressLink(hash: string): AddressLink | null {
  if (hash.startsWith(PREFIXES.setup)) {
    const secret = decoded(hash.slice(PREFIXES.setup.length));
    return secret ? { kind: 'setup', secret } : null;
  }
  if (hash.startsWith(PREFIXES.signup)) {
    const code = decoded(hash.slice(PREFIXES.signup.length));
    return code ? { kind: 'signup', code } : null;
  }
  return null;
}

/**
 * Takes a link out of the address, leaving `keepHash` (the screen that was open, `#/…`) or no hash in its place.
 * Called once before the first render, then by `watchAddressLinks`.
 */
export function takeLinkFromAddress(keepHash = ''): AddressLink | null {
  const { hash, pathname, search } = window.location;
  const isLink = hash.startsWith(PREFIXES.setup) || hash.startsWith(PREFIXES.signup);
  if (!isLink) return null;
  window.history.replaceState(window.history.state, '', pathname + search + keepHash);
  return parseAddressLink(hash);
}

/** Calls `listener` with every link opened in this page after it loaded; returns the function that stops it. */
export function watchAddressLinks(listener: (link: AddressLink) => void): () => void {
  const onHashChange = (event: HashChangeEvent): void => {
    let previous = '';
    try {
      previous = new URL(event.oldURL).hash;
    } catch {
      // No usable old address: leave no hash.
    }
    const link = takeLinkFromAddress(previous.startsWith('#/') ? previous : '');
    if (link) listener(link);
  };
  window.addEventListener('hashchange', onHashChange);
  return () => window.removeEventListener('hashchange', onHashChange);
}

/** The sign-up link for `code` on the host at `origin` (`http://192.168.1.20:5180`). */
export function signupLink(origin: string, code: string): string {
  return `${origin.replace(/\/+$/, '')}/${PREFIXES.signup}${encodeURIComponent(code)}`;
}
