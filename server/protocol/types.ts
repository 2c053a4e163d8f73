import type { BuildPlatform, Rank, Status } from './enums.js';
import type { PronounsDto } from './pronouns.js';

/** A login token as the wire carries it (reference 2.4). */
export interface TokenDto {
  content: string;
  dateCreated: number;
  dateExpire: number;
  app: string;
}

/** Stored and answered as the real server does (reference 4.4); see pronouns.ts. */
export type { PronounsDto } from './pronouns.js';

export interface BioDto {
  isPrivateAccount: boolean;
  Status: Status;
  StatusText: string;
  Description: string;
  PfpURL: string;
  BannerURL: string;
  DisplayName: string;
  Pronouns?: PronounsDto;
}

export interface BanStatusDto {
  isBanned: boolean;
  BanBegin: number;
  BanEnd: number;
  BanReason: string;
  BanDescription: string;
}

export interface WarnStatusDto {
  isWarned: boolean;
  TimeWarned: number;
  WarnReason: string;
  WarnDescription: string;
}

/** Your own user (SPEC section 2): every stored field but secrets. */
export interface PrivateUserDto {
  Id: string;
  Username: string;
  Email: string;
  isEmailVerified: boolean;
  AccountTokens: TokenDto[];
  is2FAVerified: boolean;
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

/** Anyone's view of a user: exactly the reference's censored view (section 4.3). */
export interface PublicUserDto {
  Id: string;
  Username: string;
  Badges: string[];
  Bio: Omit<BioDto, 'isPrivateAccount'>;
  Rank: Rank;
  Following?: string[];
  Followers?: string[];
  isInWorld: boolean;
}

export interface BuildDto {
  FileId: string;
  BuildPlatform: BuildPlatform;
}
