/**
 * The reference's URL allow rule (5.6): a URL is allowed when its host (port included) is the host itself or,
 * unless only local URLs are wanted, one of the allowed domains. Anything that does not parse is refused.
 */
export function isUrlAllowed(
  url: unknown,
  opts: { allowedDomains: string[]; localHosts: string[]; onlyLocal?: boolean },
): boolean {
  if (typeof url !== 'string') return false;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  const host = parsed.host.toLowerCase();
  if (opts.localHosts.some((local) => local.toLowerCase() === host)) return true;
  if (opts.onlyLocal) return false;
  return opts.allowedDomains.some((domain) => domain.toLowerCase() === host);
}
