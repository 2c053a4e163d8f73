/**
 * Which web pages may use this host from a browser. A page sends its origin (`Origin`) with cross-site requests
 * and every socket it opens; without a check, any site a user visits could sign up accounts or act through the
 * visitor's browser. Pages of this host's own addresses are always allowed (the UI it serves), plus the configured
 * `allowedOrigins` (e.g. the official dashboard's); "*" allows every page. Native clients send no Origin and are
 * not concerned.
 */
export interface OriginPolicy {
  allows(origin: string): boolean;
}

/** `entry` as a browser serialises an origin (scheme://host[:port], default port left out), or null. */
export function normaliseOrigin(entry: string): string | null {
  try {
    const url = new URL(entry);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    return url.origin;
  } catch {
    return null;
  }
}

/** Throws, naming the entry, when a configured origin is not one (a typo must not silently refuse the dashboard). */
export function createOriginPolicy(options: {
  configured: readonly string[];
  /** The bind address, the public URL and the LAN addresses, read at each change of port or LAN addresses. */
  host: string;
  publicUrl: string | null;
  port: () => number;
  lanUrls: () => readonly string[];
}): OriginPolicy {
  const any = options.configured.includes('*');
  const configured = new Set<string>();
  for (const entry of options.configured) {
    if (entry === '*') continue;
    const origin = normaliseOrigin(entry);
    if (origin === null)
      throw new Error(
        `allowedOrigins: ${JSON.stringify(entry)} is not a web origin like https://dashboard.example.com`,
      );
    configured.add(origin);
  }
  let own: { port: number; lan: readonly string[]; origins: Set<string> } | null = null;
  function ownOrigins(): Set<string> {
    const port = options.port();
    const lan = options.lanUrls();
    if (own?.port === port && own.lan === lan) return own.origins;
    const hosts = ['127.0.0.1', 'localhost', '[::1]'];
    if (options.host !== '0.0.0.0' && options.host !== '::')
      hosts.push(options.host.includes(':') ? `[${options.host}]` : options.host);
    for (const url of lan) hosts.push(new URL(url).hostname);
    const origins = new Set<string>();
    for (const host of hosts) {
      for (const scheme of ['http', 'https']) {
        const origin = normaliseOrigin(`${scheme}://${host}:${port}`);
        if (origin !== null) origins.add(origin);
      }
    }
    const pub = options.publicUrl === null ? null : normaliseOrigin(options.publicUrl);
    if (pub !== null) origins.add(pub);
    own = { port, lan, origins };
    return origins;
  }
  return {
    allows: (origin) => any || configured.has(origin) || ownOrigins().has(origin),
  };
}
