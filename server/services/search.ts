import { Publicity } from '../protocol/enums.js';
import type { AvatarMetaDto, WorldMetaDto } from '../protocol/uploads.js';
import type { AccountsService } from './accounts.js';
import type { ServiceDeps } from './context.js';
import type { UploadsService } from './uploads.js';

interface Entry {
  id: string;
  /** Lowercased name, for case-insensitive matching. */
  name: string;
  ownerId: string;
  tags: string[];
}

/**
 * Search by name and by tag (issue 8): plain case-insensitive text (never a regex built from input, unlike the
 * real server), really paginated, OwnerOnly items never listed, banned owners' content hidden unless configured.
 * Entries are kept sorted by name and rebuilt only when content changed, so a query is one scan of short strings.
 */
export function createSearchService(
  deps: Pick<ServiceDeps, 'users' | 'events'> & {
    uploads: UploadsService;
    accounts: AccountsService;
    hideBannedUsersContent: boolean;
  },
) {
  const { users, uploads, accounts } = deps;
  let built = -1;
  let avatars: Entry[] = [];
  let worlds: Entry[] = [];
  let avatarTags = new Map<string, Entry[]>();
  let worldTags = new Map<string, Entry[]>();
  let userVersion = -1;
  let userEntries: Array<{ id: string; name: string }> = [];
  /** Owners banned right now, refreshed at most once a second (a ban changes no content version). */
  let banned = { at: -Infinity, ids: new Set<string>() };
  /** Recent name queries -> every match, in order; cleared whenever content changes. Paging slices it. */
  const matchCache = new Map<string, Entry[]>();
  const MATCH_CACHE_SIZE = 500;
  // A ban (or warning) shows at once, not within the second.
  deps.events.on('tokensRevoked', () => {
    banned = { at: -Infinity, ids: banned.ids };
  });
  const userCache = new Map<string, Array<{ id: string; name: string }>>();

  const toEntry = (meta: AvatarMetaDto | WorldMetaDto): Entry => ({
    id: meta.Id,
    name: meta.Name.toLowerCase(),
    ownerId: meta.OwnerId,
    tags: meta.Tags.map((t) => t.toLowerCase()),
  });
  const byName = (a: { name: string; id: string }, b: { name: string; id: string }) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1;

  function tagIndex(entries: Entry[]): Map<string, Entry[]> {
    const index = new Map<string, Entry[]>();
    for (const entry of entries) {
      for (const tag of new Set(entry.tags)) {
        const list = index.get(tag);
        if (list) list.push(entry);
        else index.set(tag, [entry]);
      }
    }
    return index;
  }

  function refresh(): void {
    const now = Date.now();
    if (deps.hideBannedUsersContent && now - banned.at >= 1000) {
      const ids = new Set<string>();
      for (const user of users.values())
        if (user.BanStatus.isBanned && accounts.isBanned(user)) ids.add(user.Id);
      banned = { at: now, ids };
    }
    if (built === uploads.contentVersion) return;
    built = uploads.contentVersion;
    matchCache.clear();
    avatars = [...uploads.allAvatars()]
      .filter((a) => a.Publicity === Publicity.Anyone)
      .map(toEntry)
      .sort(byName);
    worlds = [...uploads.allWorlds()]
      .filter((w) => w.Publicity === Publicity.Anyone)
      .map(toEntry)
      .sort(byName);
    avatarTags = tagIndex(avatars);
    worldTags = tagIndex(worlds);
  }

  function visible(entry: Entry): boolean {
    return !banned.ids.has(entry.ownerId);
  }

  function matchesOf(kind: 'avatar' | 'world', needle: string): Entry[] {
    const key = `${kind}\u0000${needle}`;
    let found = matchCache.get(key);
    if (found) {
      // Refresh its place in the LRU order.
      matchCache.delete(key);
    } else {
      found = (kind === 'avatar' ? avatars : worlds).filter((e) => e.name.includes(needle));
      if (matchCache.size >= MATCH_CACHE_SIZE) matchCache.delete(matchCache.keys().next().value!);
    }
    matchCache.set(key, found);
    return found;
  }

  function page<T>(
    list: Iterable<T>,
    keep: (item: T) => boolean,
    itemsPerPage: number,
    pageNumber: number,
  ): T[] {
    const start = itemsPerPage * pageNumber;
    const out: T[] = [];
    let seen = 0;
    for (const item of list) {
      if (!keep(item)) continue;
      if (seen++ < start) continue;
      out.push(item);
      if (out.length === itemsPerPage) break;
    }
    return out;
  }

  return {
    users(text: string, itemsPerPage: number, pageNumber: number): string[] {
      if (userVersion !== users.size) {
        userVersion = users.size;
        userCache.clear();
        userEntries = [...users.values()]
          .map((u) => ({ id: u.Id, name: u.Username.toLowerCase() }))
          .sort(byName);
      }
      const needle = text.toLowerCase();
      const key = `user\u0000${needle}`;
      let found = userCache.get(key);
      if (!found) {
        found = userEntries.filter((u) => u.name.includes(needle));
        if (userCache.size >= MATCH_CACHE_SIZE) userCache.delete(userCache.keys().next().value!);
        userCache.set(key, found);
      }
      return found.slice(itemsPerPage * pageNumber, itemsPerPage * (pageNumber + 1)).map((u) => u.id);
    },

    byName(kind: 'avatar' | 'world', text: string, itemsPerPage: number, pageNumber: number): string[] {
      refresh();
      return page(matchesOf(kind, text.toLowerCase()), visible, itemsPerPage, pageNumber).map((e) => e.id);
    },

    byTag(kind: 'avatar' | 'world', tag: string, itemsPerPage: number, pageNumber: number): string[] {
      refresh();
      const list = (kind === 'avatar' ? avatarTags : worldTags).get(tag.toLowerCase()) ?? [];
      return page(list, visible, itemsPerPage, pageNumber).map((e) => e.id);
    },
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
