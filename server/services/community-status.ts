import { COMMUNITY_CHECK_MS, type CommunityDto, type ServiceCheckDto } from '../protocol/host-info.js';
import { redactUrl } from '../../shared/redact-url.js';
import { withTimeout } from '../../shared/with-timeout.js';

/** What the status asks of the database hosts share (PgStore): a round trip, and how many hosts it hears. */
export interface CommunityDatabase {
  url: string;
  ping(): Promise<unknown>;
  hostCount(): number;
}

/** What the status asks of Redis (the cluster link's command connection). */
export interface CommunityRedis {
  url: string;
  ping(): Promise<unknown>;
}

/** `text` with the password of `url` (as written, and decoded) masked. */
function withoutPassword(text: string, url: string): string {
  let secrets: string[] = [];
  try {
    const password = new URL(url).password;
    secrets = password ? [password, decodeURIComponent(password)] : [];
  } catch {
    // An unparsable URL (or password escape): its redacted form says so; the text is left as it is.
  }
  return secrets.reduce((t, secret) => t.split(secret).join('***'), text);
}

/** Times one check, bounded by COMMUNITY_CHECK_MS whatever the service's own limits are. */
async function check(url: string, ping: () => Promise<unknown>): Promise<ServiceCheckDto> {
  const address = redactUrl(url);
  const started = performance.now();
  try {
    await withTimeout(ping(), COMMUNITY_CHECK_MS, `no answer within ${COMMUNITY_CHECK_MS / 1000} s`);
    return { address, ok: true, ms: Math.round(performance.now() - started), problem: null };
  } catch (error) {
    const problem = error instanceof Error ? error.message : String(error);
    return { address, ok: false, ms: null, problem: withoutPassword(problem, url) };
  }
}

/**
 * The Host screen's "Community" facts: the embedded folder, or the database and Redis this host shares with
 * others, each checked now (a round trip each, at most COMMUNITY_CHECK_MS), and the hosts the database hears.
 */
export async function communityStatus(
  database: CommunityDatabase | null,
  redis: CommunityRedis | null,
): Promise<CommunityDto> {
  const [db, shared] = await Promise.all([
    database ? check(database.url, () => database.ping()) : null,
    redis ? check(redis.url, () => redis.ping()) : null,
  ]);
  return {
    storage: database ? 'postgres' : 'embedded',
    database: db,
    redis: shared,
    hosts: database ? database.hostCount() : 1,
  };
}
