import type { BanStatusDto, BioDto, WarnStatusDto } from '../protocol/types.js';
import { Status, type Rank } from '../protocol/enums.js';
import type { DataStore, ReadCollection, Tx, TxRepo } from './seam.js';

/** A token as stored: only its SHA-256, so a leaked data folder hands out no live session. */
export interface StoredToken {
  hash: string;
  dateCreated: number;
  dateExpire: number;
  app: string;
  /**
   * How the session began, when by the account's password: 'password' (sign-up, or a sign-in without 2FA) or
   * 'password+2fa'. Absent for records made before it was kept: such a token never counts as a recent sign-in.
   */
  signIn?: 'password' | 'password+2fa';
}

/** A new account as stored: online, nothing linked yet. (Also how the bench scripts seed users.) */
export function newUserRecord(fields: {
  id: string;
  username: string;
  email: string;
  hashed: string;
  rank: Rank;
  token: StoredToken;
  now: number;
}): StoredUser {
  return {
    Id: fields.id,
    Username: fields.username,
    HashedPassword: fields.hashed,
    Email: fields.email,
    isEmailVerified: false,
    AccountTokens: [fields.token],
    is2FAVerified: false,
    TwoFA: null,
    BlockedUsers: [],
    Following: [],
    Followers: [],
    OutgoingFriendRequests: [],
    FriendRequests: [],
    Friends: [],
    Badges: [],
    Bio: {
      isPrivateAccount: false,
      Status: Status.Online,
      StatusText: '',
      Description: '',
      PfpURL: '',
      BannerURL: '',
      DisplayName: '',
    },
    Rank: fields.rank,
    AccountCreationDate: fields.now,
    BanStatus: { isBanned: false, BanBegin: 0, BanEnd: 0, BanReason: '', BanDescription: '' },
    BanCount: 0,
    WarnStatus: { isWarned: false, TimeWarned: 0, WarnReason: '', WarnDescription: '' },
    WarnCount: 0,
    Avatars: [],
    Worlds: [],
  };
}

export interface StoredUser {
  Id: string;
  Username: string;
  HashedPassword: string;
  Email: string;
  isEmailVerified: boolean;
  AccountTokens: StoredToken[];
  is2FAVerified: boolean;
  /** The TOTP secret, pending until verify2fa sets is2FAVerified. Never leaves the server. */
  TwoFA: { base32: string } | null;
  BlockedUsers: string[];
  Following: string[];
  Followers: string[];
  OutgoingFriendRequests: string[];
  FriendRequests: string[];
  Friends: string[];
  Badges: string[];
  Bio: BioDto;
  Rank: Rank;
  AccountCreationDate: number;
  BanStatus: BanStatusDto;
  BanCount: number;
  WarnStatus: WarnStatusDto;
  WarnCount: number;
  Avatars: string[];
  Worlds: string[];
}

export const USERS = 'users';
/** Unique indexes of the users collection: lower-cased name and email. */
export const BY_NAME = 'name';
export const BY_EMAIL = 'email';
/** A list index holding every user with a ban on record (lifted or expired ones drop out when next written). */
export const BANNED = 'banned';

/** The users collection as readers see it (durable, frozen records), with its case-insensitive indexes. */
export class UsersRepo {
  readonly #collection: ReadCollection<StoredUser>;

  constructor(readonly store: DataStore) {
    this.#collection = store.collection<StoredUser>(USERS);
    this.#collection.addIndex(BY_NAME, (user) => user.Username.toLowerCase());
    this.#collection.addIndex(BY_EMAIL, (user) => (user.Email ? user.Email.toLowerCase() : undefined));
    this.#collection.addListIndex(BANNED, (user) => (user.BanStatus?.isBanned ? ['yes'] : []));
  }

  count(): Promise<number> {
    return this.#collection.count();
  }

  get(id: string): Promise<StoredUser | undefined> {
    return this.#collection.get(id);
  }

  getMany(ids: readonly string[]): Promise<StoredUser[]> {
    return this.#collection.getMany(ids);
  }

  byUsername(username: string): Promise<StoredUser | undefined> {
    return this.#collection.find(BY_NAME, username.toLowerCase());
  }

  /** Up to `limit` users whose name starts with `prefix` (any case), in name order. */
  byNamePrefix(prefix: string, limit: number): Promise<StoredUser[]> {
    return this.#collection.findByPrefix(BY_NAME, prefix.toLowerCase(), limit);
  }

  /** Users whose name holds `text` (any case), in name order: `offset` skipped, at most `limit`. */
  async searchByName(text: string, offset: number, limit: number): Promise<string[]> {
    const hits = await this.#collection.searchKeys(BY_NAME, { contains: text.toLowerCase() }, offset, limit);
    return hits.map((hit) => hit.id);
  }

  /** Users marked banned (some of whose bans may have run out since: check the end). */
  banned(): Promise<StoredUser[]> {
    return this.#collection.list(BANNED, 'yes');
  }

  byEmail(email: string): Promise<StoredUser | undefined> {
    return this.#collection.find(BY_EMAIL, email.toLowerCase());
  }

  /** Every user (admin tools and startup indexes; a request never walks every user). */
  scan(): AsyncIterable<StoredUser> {
    return this.#collection.scan();
  }

  /** The users collection inside a transaction. */
  static in(t: Tx): TxRepo<StoredUser> {
    return t.repo<StoredUser>(USERS);
  }
}
