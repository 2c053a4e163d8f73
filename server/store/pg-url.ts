/** The URL without its password, for messages and logs (no PostgreSQL client is loaded for it). */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the given --database URL';
  }
}
