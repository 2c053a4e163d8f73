import type { Logger } from 'pino';
import { InviteRefusal, sentInviteRequestJson, ServerMessage } from '../protocol/socket.js';
import { send, type Connection } from './connection.js';
import type { InviteAnswers, SocketContext } from './socket-context.js';

type WaitingAnswer = { conn: Connection; text: string; targetUserId: string };

/**
 * sentinviterequest answers waiting for the history write that makes their request durable. Requests of the
 * same tick share that write (the log's group commit), so they are answered together, with one promise reaction
 * per write instead of one per request (a socket owed several answers then gets them in one socket write).
 */
export function createInviteAnswers(log: Logger): InviteAnswers {
  let waiting: { saved: Promise<void>; answers: WaitingAnswer[] } | null = null;
  return {
    answerWhenSaved(conn, saved, text, targetUserId) {
      if (waiting?.saved !== saved) {
        const group = { saved, answers: [] as WaitingAnswer[] };
        waiting = group;
        saved.then(
          () => {
            if (waiting === group) waiting = null;
            for (const answer of group.answers) answer.conn.out.send(answer.text);
          },
          (error: unknown) => {
            if (waiting === group) waiting = null;
            log.error({ err: error, requests: group.answers.length }, 'could not save invite requests');
            for (const answer of group.answers) {
              send(answer.conn, ServerMessage.failedToRequestInvite, {
                targetUserId: answer.targetUserId,
                reason: InviteRefusal.NOT_SAVED,
              });
            }
          },
        );
      }
      waiting.answers.push({ conn, text, targetUserId });
    },
  };
}

/**
 * requestinvite: the sender hears sentinviterequest once the request is saved, or failedtorequestinvite with
 * the reason. The socket's next messages do not wait for it.
 */
export function requestInvite(ctx: SocketContext, conn: Connection, userId: string, args: unknown): void {
  const { invites, log } = ctx.deps;
  const target =
    args !== null && typeof args === 'object' ? (args as { targetUserId?: unknown }).targetUserId : undefined;
  void invites.request(userId, target).then(
    (outcome) => {
      if (outcome.ok) {
        ctx.inviteAnswers.answerWhenSaved(
          conn,
          outcome.delivered,
          sentInviteRequestJson(outcome.targetUserId, outcome.requestId),
          outcome.targetUserId,
        );
      } else {
        send(conn, ServerMessage.failedToRequestInvite, {
          targetUserId: typeof target === 'string' ? target : '',
          reason: outcome.reason,
          ...(outcome.retryAfter !== undefined && { retryAfter: outcome.retryAfter }),
        });
      }
    },
    (error: unknown) => {
      // The shared cooldowns could not be reached: nothing was delivered or saved.
      log.error({ err: error }, 'could not check the invite-request cooldown');
      send(conn, ServerMessage.failedToRequestInvite, {
        targetUserId: typeof target === 'string' ? target : '',
        reason: InviteRefusal.NOT_SAVED,
      });
    },
  );
}
