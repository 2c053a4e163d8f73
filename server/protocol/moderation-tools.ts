import { z } from 'zod';
import { Rank } from './enums.js';
import { multilineText } from './text-rules.js';
import type { BanStatusDto, WarnStatusDto } from './types.js';

/**
 * Our additions for moderators (issue 28): a user's content listed for moderation, the "remove all content" job,
 * private notes on a user, and the push that tells a user's own windows of a change to their account. None of
 * these exist on the real server; real clients never call them and ignore the socket messages they do not know.
 */

const id = z.string().min(1).max(200);
const token = z.string().min(1).max(500);
const Auth = z.object({ userid: id, tokenContent: token });

/** The longest private note, in characters. */
export const USER_NOTE_MAX = 2000;
/** The most notes kept on one user. */
export const USER_NOTES_PER_USER_MAX = 500;
/** The least rank that reads and adds notes. */
export const NOTES_MIN_RANK = Rank.Moderator;
/** The least rank that deletes anyone's note (authors delete their own). */
export const NOTES_DELETE_ANY_RANK = Rank.Admin;

export const UserContentRequest = Auth.extend({ targetUserId: id });
export const ContentJobStartRequest = Auth.extend({ targetUserId: id });
export const ContentJobsRequest = Auth.extend({ targetUserId: id.optional() });
export const UserNotesRequest = Auth.extend({ targetUserId: id });
export const AddUserNoteRequest = Auth.extend({
  targetUserId: id,
  text: multilineText(z.string().trim().min(1, 'write something').max(USER_NOTE_MAX)),
});
export const RemoveUserNoteRequest = Auth.extend({ noteId: id });

/** An avatar or world as the moderation Content tab lists it. */
export interface ContentAssetDto {
  Id: string;
  Name: string;
  Publicity: number;
  DateCreated: number;
  DateUpdated: number;
  /** The bytes of its build files. */
  Size: number;
  /** Its build files' ids (removed with it). */
  FileIds: string[];
}

export interface ContentFileDto {
  FileId: string;
  OriginalName: string;
  UploadType: number;
  Size: number;
  DateUploaded: number;
  /** The avatar or world this file is a build of, if any (removing that removes the file). */
  BuildOf: string | null;
}

export interface UserContentDto {
  Avatars: ContentAssetDto[];
  Worlds: ContentAssetDto[];
  Files: ContentFileDto[];
}

export type ContentJobState = 'running' | 'done' | 'stopped';

export interface ContentJobFailure {
  kind: 'avatar' | 'world' | 'file';
  id: string;
  reason: string;
}

/** A "remove all content of this user" job, as moderators see it (and as it is stored, lease aside). */
export interface ContentJobDto {
  id: string;
  targetUserId: string;
  targetName: string;
  moderatorId: string;
  moderatorName: string;
  state: ContentJobState;
  /** Items done + failed + still to do, as last counted. */
  total: number;
  done: number;
  failed: number;
  /** The most recent failures (at most 20). */
  failures: ContentJobFailure[];
  /** Why the job stopped before the end (state `stopped`), e.g. the moderator lost their rank. */
  stoppedReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface UserNoteDto {
  id: string;
  targetUserId: string;
  authorId: string;
  authorName: string;
  text: string;
  createdAt: number;
  /** Whether the asking moderator may delete it (the author, or Admin and above). */
  canDelete: boolean;
}

/** `accountchanged`: the user's own moderation-relevant fields as they are now. */
export interface AccountChangedResult {
  userId: string;
  Rank: Rank;
  Badges: string[];
  BanStatus: BanStatusDto;
  BanCount: number;
  WarnStatus: WarnStatusDto;
  WarnCount: number;
}
