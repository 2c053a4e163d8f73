import type { AccountsService } from './accounts.js';
import type { ServiceDeps } from './context.js';
import type { UploadsService } from './uploads.js';

/** Matches read per query while banned owners' content is left out (walked from the first match). */
const CHUNK = 200;
const NOBODY: ReadonlySet<string> = new Set();

/**
 * Search by name and by tag (issue 8): plain case-insensitive text (never a regex built from input, unlike the
 * real server), really paginated, OwnerOnly items never listed, banned owners' content hidden unless configured.
 * Each search reads a store index (users by name; public avatars and worlds by name and by tag, declared in
 * uploads/indexes.ts), so it sees every change whichever host made it: a query on PostgreSQL, the index's sorted
 * keys on the embedded store. No host keeps a list of the community's users or content.
 */
export function createSearchService(
  deps: Pick<ServiceDeps, 'users' | 'events'> & {
    uploads: UploadsService;
    accounts: AccountsService;
    hideBannedUsersContent: boolean;
  },
) {
  const { users, uploads, accounts } = deps;
  /** Owners banned right now, read again at most once a second (a ban changes no content). */
  let banned = { at: -Infinity, ids: NOBODY };
  // A ban (or warning) shows at once, not within the second.
  deps.events.on('tokensRevoked', () => {
    banned = { at: -Infinity, ids: banned.ids };
  });

  /** The owners whose content search leaves out: none unless configured. */
  async function hiddenOwners(): Promise<ReadonlySet<string>> {
    if (!deps.hideBannedUsersContent) return NOBODY;
    const now = Date.now();
    if (now - banned.at >= 1000) {
      const ids = new Set<string>();
      // The banned users' index (a query on PostgreSQL), never a walk of every user.
      for (const user of await users.banned()) if (accounts.isBanned(user)) ids.add(user.Id);
      banned = { at: now, ids };
    }
    return banned.ids;
  }

  /** A page of public avatars or worlds matching `text` by name or tag, banned owners' left out when configured. */
  async function contentPage(
    kind: 'avatar' | 'world',
    by: 'name' | 'tag',
    text: string,
    itemsPerPage: number,
    pageNumber: number,
  ): Promise<string[]> {
    const skip = itemsPerPage * pageNumber;
    const hidden = await hiddenOwners();
    if (hidden.size === 0) {
      return (await uploads.search(kind, by, text, skip, itemsPerPage)).map((hit) => hit.id);
    }
    const page: string[] = [];
    let seen = 0;
    for (let offset = 0; ; offset += CHUNK) {
      const hits = await uploads.search(kind, by, text, offset, CHUNK);
      const ids = hits.map((hit) => hit.id);
      for (const asset of await (kind === 'avatar' ? uploads.avatars(ids) : uploads.worlds(ids))) {
        if (hidden.has(asset.OwnerId) || seen++ < skip) continue;
        page.push(asset.Id);
        if (page.length === itemsPerPage) return page;
      }
      if (hits.length < CHUNK) return page;
    }
  }

  return {
    async users(text: string, itemsPerPage: number, pageNumber: number): Promise<string[]> {
      return users.searchByName(text, itemsPerPage * pageNumber, itemsPerPage);
    },

    byName(kind: 'avatar' | 'world', text: string, itemsPerPage: number, pageNumber: number) {
      return contentPage(kind, 'name', text, itemsPerPage, pageNumber);
    },

    byTag(kind: 'avatar' | 'world', tag: string, itemsPerPage: number, pageNumber: number) {
      return contentPage(kind, 'tag', tag, itemsPerPage, pageNumber);
    },
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
