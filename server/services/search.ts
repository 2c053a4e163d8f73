import { Publicity } from '../protocol/enums.js';
import type { AvatarMetaDto, WorldMetaDto } from '../protocol/uploads.js';
import type { AccountsService } from './accounts.js';
import type { ServiceDeps } from './context.js';
import { USERS } from '../store/users.js';
import type { UploadsService } from './uploads.js';

interface Entry {
  id: string;
  /** Lowercased name, for case-insensitive matching. */
  name: string;
  ownerId: string;
  tags: string[];
}

/**
 * Names sorted, joined into one string (NUL between them) with each one's offset: a query is a run of native
 * `indexOf` over that string, in name order, that stops as soon as the page it answers is full.
 */
class NameList<T extends { name: string }> {
  readonly entries: T[];
  readonly #text: string;
  readonly #starts: Int32Array;

  constructor(entries: T[]) {
    this.entries = entries;
    this.#starts = new Int32Array(entries.length);
    let offset = 0;
    entries.forEach((entry, index) => {
      this.#starts[index] = offset;
      offset += entry.name.length + 1;
    });
    this.#text = entries.map((entry) => entry.name).join('\u0000');
  }

  /** Entries whose name contains `needle`, in name order; `visit` returns false to stop. */
  scan(needle: string, visit: (entry: T) => boolean): void {
    if (needle.length === 0) return;
    const text = this.#text;
    const starts = this.#starts;
    let from = 0;
    for (;;) {
      const at = text.indexOf(needle, from);
      if (at < 0) return;
      const index = this.#entryAt(at);
      const entry = this.entries[index]!;
      if (at + needle.length > starts[index]! + entry.name.length) {
        from = at + 1; // runs across the NUL into the next name (a needle holding NUL): not a match
        continue;
      }
      if (!visit(entry)) return;
      from = index + 1 < starts.length ? starts[index + 1]! : text.length;
    }
  }

  /** The entry whose name holds offset `at`: the last start at or before it. */
  #entryAt(at: number): number {
    const starts = this.#starts;
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (starts[mid]! <= at) low = mid;
      else high = mid - 1;
    }
    return low;
  }
}

/**
 * Search by name and by tag (issue 8): plain case-insensitive text (never a regex built from input, unlike the
 * real server), really paginated, OwnerOnly items never listed, banned owners' content hidden unless configured.
 * Lists are rebuilt only when content changed; a name query scans them natively and stops at a full page.
 */
export function createSearchService(
  deps: Pick<ServiceDeps, 'users' | 'events' | 'store'> & {
    uploads: UploadsService;
    accounts: AccountsService;
    hideBannedUsersContent: boolean;
  },
) {
  const { users, uploads, accounts } = deps;
  let built = -1;
  let avatars = new NameList<Entry>([]);
  let worlds = new NameList<Entry>([]);
  let avatarTags = new Map<string, Entry[]>();
  let worldTags = new Map<string, Entry[]>();
  let userEntries: NameList<{ id: string; name: string }> | null = null;
  let listedUsers = new Set<string>();
  let newUsers = 0;
  // Usernames never change: the name list is stale only once a user it does not hold appears (any host's sign-up),
  // or when changes may have been missed. No count of every user per search.
  deps.store.watch(USERS, (userId) => {
    if (userId !== null && listedUsers.has(userId)) return;
    userEntries = null;
    newUsers++;
  });
  /** Owners banned right now, refreshed at most once a second (a ban changes no content version). */
  let banned = { at: -Infinity, ids: new Set<string>() };
  // A ban (or warning) shows at once, not within the second.
  deps.events.on('tokensRevoked', () => {
    banned = { at: -Infinity, ids: banned.ids };
  });

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

  async function publicEntries(all: AsyncIterable<AvatarMetaDto | WorldMetaDto>): Promise<NameList<Entry>> {
    const entries: Entry[] = [];
    for await (const asset of all) if (asset.Publicity === Publicity.Anyone) entries.push(toEntry(asset));
    return new NameList(entries.sort(byName));
  }

  async function refresh(): Promise<void> {
    const now = Date.now();
    if (deps.hideBannedUsersContent && now - banned.at >= 1000) {
      const ids = new Set<string>();
      // The banned users' index (a query on PostgreSQL), never a walk of every user.
      for (const user of await users.banned()) if (accounts.isBanned(user)) ids.add(user.Id);
      banned = { at: now, ids };
    }
    if (built === uploads.contentVersion) return;
    built = uploads.contentVersion;
    avatars = await publicEntries(uploads.allAvatars());
    worlds = await publicEntries(uploads.allWorlds());
    avatarTags = tagIndex(avatars.entries);
    worldTags = tagIndex(worlds.entries);
  }

  function visible(entry: Entry): boolean {
    return !banned.ids.has(entry.ownerId);
  }

  /** One page of `keep`-ing items, `take` feeding them in order until it is told to stop. */
  function pageOf<T>(
    take: (visit: (item: T) => boolean) => void,
    keep: (item: T) => boolean,
    itemsPerPage: number,
    pageNumber: number,
  ): T[] {
    const skip = itemsPerPage * pageNumber;
    const out: T[] = [];
    let seen = 0;
    take((item) => {
      if (!keep(item) || seen++ < skip) return true;
      out.push(item);
      return out.length < itemsPerPage;
    });
    return out;
  }

  return {
    async users(text: string, itemsPerPage: number, pageNumber: number): Promise<string[]> {
      let list = userEntries;
      if (!list) {
        const seen = newUsers;
        const entries: Array<{ id: string; name: string }> = [];
        for await (const u of users.scan()) entries.push({ id: u.Id, name: u.Username.toLowerCase() });
        list = new NameList(entries.sort(byName));
        listedUsers = new Set(entries.map((entry) => entry.id));
        // One that signed up while the list was read makes the next search read it again.
        if (newUsers === seen) userEntries = list;
      }
      const needle = text.toLowerCase();
      const each = (visit: (user: { id: string; name: string }) => boolean): void => list.scan(needle, visit);
      return pageOf(each, () => true, itemsPerPage, pageNumber).map((u) => u.id);
    },

    async byName(kind: 'avatar' | 'world', text: string, itemsPerPage: number, pageNumber: number) {
      await refresh();
      const list = kind === 'avatar' ? avatars : worlds;
      const needle = text.toLowerCase();
      return pageOf((visit) => list.scan(needle, visit), visible, itemsPerPage, pageNumber).map((e) => e.id);
    },

    async byTag(kind: 'avatar' | 'world', tag: string, itemsPerPage: number, pageNumber: number) {
      await refresh();
      const list = (kind === 'avatar' ? avatarTags : worldTags).get(tag.toLowerCase()) ?? [];
      const each = (visit: (entry: Entry) => boolean): void => {
        for (const entry of list) if (!visit(entry)) return;
      };
      return pageOf(each, visible, itemsPerPage, pageNumber).map((e) => e.id);
    },
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
