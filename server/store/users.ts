import type { BanStatusDto, BioDto, WarnStatusDto } from '../protocol/types.js';
import { Status, type Rank } from '../protocol/enums.js';
import type { Change, Collection, Store } from './store.js';

/** A token as stored: only its SHA-256, so a leaked data folder hands out no live session. */
export interface StoredToken {
  hash: string;
  dateCreated: number;
  dateExpire: number;
  app: string;
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

/** The users collection with its case-insensitive username and email indexes. */
export class UsersRepo {
  readonly #byName = new Map<string, string>();
  readonly #byEmail = new Map<string, string>();
  readonly #collection: Collection<StoredUser>;

  constructor(readonly store: Store) {
    this.#collection = store.collection<StoredUser>(USERS);
    for (const user of this.#collection.values()) this.#index(user);
  }

  get size(): number {
    return this.#collection.size;
  }

  get(id: string): StoredUser | undefined {
    return this.#collection.get(id);
  }

  byUsername(username: string): StoredUser | undefined {
    const id = this.#byName.get(username.toLowerCase());
    return id === undefined ? undefined : this.#collection.get(id);
  }

  byEmail(email: string): StoredUser | undefined {
    const id = this.#byEmail.get(email.toLowerCase());
    return id === undefined ? undefined : this.#collection.get(id);
  }

  values(): IterableIterator<StoredUser> {
    return this.#collection.values();
  }

  /** Adds a new user to memory and the indexes; commit the change to make it durable. */
  insert(user: StoredUser): Change {
    const change = this.#collection.put(user.Id, user);
    this.#index(user);
    return change;
  }

  /** Sequence number of the user's last change (0 when unknown). */
  seqOf(id: string): number {
    return this.#collection.snapshot(id)?.seq ?? 0;
  }

  /** Marks an in-place mutation of `user` for the next commit. */
  touch(user: StoredUser): Change {
    return this.#collection.touch(user.Id);
  }

  #index(user: StoredUser): void {
    this.#byName.set(user.Username.toLowerCase(), user.Id);
    if (user.Email) this.#byEmail.set(user.Email.toLowerCase(), user.Id);
  }
}
