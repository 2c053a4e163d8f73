// A URL fit for messages and logs (shared/: see atomic-file.ts): the stores and the cluster link name their
// PostgreSQL and Redis servers with it, without one layer importing the other for it.

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the given --database URL';
  }
}
