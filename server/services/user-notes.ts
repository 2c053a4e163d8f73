import { AppError } from '../errors.js';
import { Rank, RANK_NAMES } from '../protocol/enums.js';
import { ErrorCode } from '../protocol/errors.js';
import {
  NOTES_DELETE_ANY_RANK,
  NOTES_MIN_RANK,
  USER_NOTES_PER_USER_MAX,
  type UserNoteDto,
} from '../protocol/moderation-tools.js';
import { textProblem } from '../protocol/text-rules.js';
import type { HostStore } from '../store/seam.js';
import type { StoredUser, UsersRepo } from '../store/users.js';
import { unixSeconds, type Clock, type Ids } from './context.js';

/** The store collection of private notes on users: one record per note. */
export const USER_NOTES = 'usernotes';
/** List index of notes: the user they are about. */
const BY_TARGET = 'target';

export interface StoredUserNote {
  id: string;
  targetUserId: string;
  authorId: string;
  authorName: string;
  text: string;
  createdAt: number;
  /** Milliseconds, to keep notes of one second in the order they were written. */
  createdAtMs?: number;
}

/**
 * Private notes moderators keep on a user (issue 28, our addition). Moderator and above read and add them, on users
 * ranked strictly below them (the moderation rule): so the user never sees notes about themselves, whatever rank
 * they reach later, nor does anyone below Moderator. The author deletes their own; Admin and above any. One record
 * per note, so adds from several hosts at once never overwrite each other.
 */
export function createUserNotes(deps: { store: HostStore; users: UsersRepo; clock: Clock; ids: Ids }) {
  const { store, users, clock, ids } = deps;
  const notes = store.collection<StoredUserNote>(USER_NOTES);
  notes.addListIndex(BY_TARGET, (note) => [note.targetUserId]);

  const view = (caller: StoredUser, note: StoredUserNote): UserNoteDto => ({
    ...note,
    canDelete: note.authorId === caller.Id || caller.Rank >= NOTES_DELETE_ANY_RANK,
  });

  async function targetOrThrow(caller: StoredUser, targetUserId: string): Promise<StoredUser> {
    if (caller.Rank < NOTES_MIN_RANK)
      throw new AppError(
        ErrorCode.NOT_A_MODERATOR,
        'Invalid permissions! Notes need rank Moderator or higher.',
      );
    const target = await users.get(targetUserId);
    if (!target)
      throw new AppError(ErrorCode.USER_NOT_FOUND, 'Could not find user!', {
        targetUserId: 'no user has that id',
      });
    if (target.Id === caller.Id)
      throw new AppError(ErrorCode.CANNOT_MODERATE_SELF, 'Notes about yourself are not yours to read.');
    if (target.Rank >= caller.Rank) {
      throw new AppError(
        ErrorCode.TARGET_RANK_TOO_HIGH,
        `Notes are kept on users ranked below you; ${target.Username} is ${RANK_NAMES[target.Rank]}.`,
      );
    }
    return target;
  }

  return {
    /** The notes on `targetUserId`, newest first. */
    async list(caller: StoredUser, targetUserId: string): Promise<UserNoteDto[]> {
      const target = await targetOrThrow(caller, targetUserId);
      const found = await notes.list(BY_TARGET, target.Id);
      return found
        .sort((a, b) => (b.createdAtMs ?? b.createdAt * 1000) - (a.createdAtMs ?? a.createdAt * 1000))
        .map((n) => view(caller, n));
    },

    async add(caller: StoredUser, targetUserId: string, rawText: string): Promise<UserNoteDto> {
      const target = await targetOrThrow(caller, targetUserId);
      const text = rawText.trim();
      const problem = textProblem(text, 'multiline');
      if (problem) throw new AppError(ErrorCode.INVALID_PARAMETERS, `Note ${problem}`, { text: problem });
      const note = await store.tx(async (t) => {
        const repo = t.repo<StoredUserNote>(USER_NOTES);
        // Read in the transaction: two adds at once (any hosts) conflict here and one runs again.
        if ((await repo.list(BY_TARGET, target.Id)).length >= USER_NOTES_PER_USER_MAX) {
          throw new AppError(
            ErrorCode.INVALID_PARAMETERS,
            `${target.Username} has as many notes as a user can have; delete old ones first.`,
          );
        }
        const id = ids.id('usernote');
        return repo.put(id, {
          id,
          targetUserId: target.Id,
          authorId: caller.Id,
          authorName: caller.Username,
          text,
          createdAt: unixSeconds(clock),
          createdAtMs: clock.now(),
        });
      });
      return view(caller, note);
    },

    async remove(caller: StoredUser, noteId: string): Promise<void> {
      const note = await notes.get(noteId);
      if (!note) throw new AppError(ErrorCode.NOT_FOUND, 'No note has that id.', { noteId: 'no such note' });
      await targetOrThrow(caller, note.targetUserId);
      if (note.authorId !== caller.Id && caller.Rank < NOTES_DELETE_ANY_RANK) {
        throw new AppError(
          ErrorCode.FORBIDDEN,
          `Only its author or an ${RANK_NAMES[Rank.Admin]} can delete a note.`,
        );
      }
      await store.tx(async (t) => {
        const repo = t.repo<StoredUserNote>(USER_NOTES);
        if (await repo.has(noteId)) await repo.remove(noteId);
      });
    },
  };
}

export type UserNotes = ReturnType<typeof createUserNotes>;
