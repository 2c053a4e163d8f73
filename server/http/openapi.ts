import type Router from '@koa/router';
import { z } from 'zod';
import * as S from '../protocol/schemas.js';
import * as B from '../protocol/builds.js';
import { ErrorCode } from '../protocol/errors.js';
import * as P from '../protocol/people.js';
import * as H from '../protocol/host-info.js';
import * as W from '../protocol/webhooks.js';
import * as MT from '../protocol/moderation-tools.js';
import * as AL from '../protocol/audit.js';

/**
 * The OpenAPI 3.1 document of every route the router serves. Paths and methods come from the router itself; each
 * route's request schema is the same zod object its handler validates with, turned into JSON Schema. A route
 * with no entry below fails the test that compares the two, so the document cannot drift from the server.
 */
export interface RouteDoc {
  summary: string;
  tag: string;
  /** The JSON body (or form fields for multipart), validated by the handler with this same schema. */
  body?: z.ZodType;
  multipart?: boolean;
  query?: z.ZodType;
  /** Keys of `result` on success, in words. */
  result?: string;
  /** Raw bytes instead of the envelope on success. */
  binary?: boolean;
}

const auth = 'userid + tokenContent in the body';
const paging = 'itemsPerPage 1..100, page from 0';

export const ROUTE_DOCS: Record<string, RouteDoc> = {
  'POST /createUser': {
    tag: 'Accounts',
    summary: 'Create an account (rank Registered)',
    body: S.CreateUserRequest,
    result: 'UserData: your private user, AccountTokens[0] holds the signup token',
  },
  'POST /login': {
    tag: 'Accounts',
    summary: 'Log in; LoginResult 0 Incorrect, 1 Missing2FA, 2 Banned, 3 Warned, 4 Correct',
    body: S.LoginRequest,
    result: 'LoginResult, token?, BanStatus?, WarnStatus?',
  },
  'POST /logout': { tag: 'Accounts', summary: 'Revoke the token', body: S.AuthRequest },
  'POST /isValidToken': {
    tag: 'Accounts',
    summary: 'Whether a token is live',
    body: S.IsValidTokenRequest,
    result: 'isValidToken',
  },
  'POST /getUser': {
    tag: 'Accounts',
    summary: 'Public view of anyone, or your private view with your token',
    body: S.GetUserRequest,
    result: 'UserData',
  },
  'GET /getUser': {
    tag: 'Accounts',
    summary: 'Public view of a user',
    query: S.GetUserQuery,
    result: 'UserData',
  },
  'GET /doesUserExist': {
    tag: 'Accounts',
    summary: 'Whether a user id exists',
    query: S.DoesUserExistQuery,
    result: 'doesUserExist',
  },
  'POST /updateBio': {
    tag: 'Accounts',
    summary: 'Change status, status text, description, display name, images, pronouns',
    body: S.UpdateBioRequest,
    result: 'Bio',
  },
  'POST /enable2fa': {
    tag: 'Accounts',
    summary: 'Start 2FA enrolment',
    body: S.AuthRequest,
    result: 'otpauth_url',
  },
  'POST /verify2fa': { tag: 'Accounts', summary: 'Confirm 2FA with a code', body: S.Verify2faRequest },
  'POST /remove2fa': {
    tag: 'Accounts',
    summary:
      'Turn 2FA off; needs currentPassword and the current 2FA code (twofacode), or a session a password sign-in made within limits.recentSignInSeconds',
    body: S.Remove2faRequest,
  },
  'POST /resetPassword': {
    tag: 'Accounts',
    summary:
      'Change your password while signed in, with currentPassword (and twofacode when 2FA is on) or within limits.recentSignInSeconds of a password sign-in; every session ends. By email: not configured',
    body: S.ChangePasswordRequest,
  },
  'POST /sendVerificationEmail': {
    tag: 'Accounts',
    summary: 'Answers EMAIL_NOT_CONFIGURED: this host sends no email',
  },
  'POST /verifyEmailToken': { tag: 'Accounts', summary: 'Answers EMAIL_NOT_CONFIGURED' },
  'POST /changeEmail': { tag: 'Accounts', summary: 'Answers EMAIL_NOT_CONFIGURED' },
  'POST /requestPasswordReset': { tag: 'Accounts', summary: 'Answers EMAIL_NOT_CONFIGURED' },
  'POST /sendFriendRequest': { tag: 'Social', summary: 'Ask to be friends', body: S.TargetRequest },
  'POST /acceptFriendRequest': {
    tag: 'Social',
    summary: 'Accept a request from targetUserId',
    body: S.TargetRequest,
  },
  'POST /declineFriendRequest': {
    tag: 'Social',
    summary: 'Decline a request from targetUserId',
    body: S.TargetRequest,
  },
  'POST /cancelFriendRequest': {
    tag: 'Social',
    summary:
      'Our addition: withdraw your unanswered request to targetUserId (both sides hear frienddeclined)',
    body: S.TargetRequest,
  },
  'POST /removeFriend': { tag: 'Social', summary: 'End a friendship', body: S.TargetRequest },
  'POST /blockUser': {
    tag: 'Social',
    summary: 'Block (ends friendship, requests and follows both ways)',
    body: S.TargetRequest,
  },
  'POST /unblockUser': { tag: 'Social', summary: 'Unblock', body: S.TargetRequest },
  'POST /followUser': { tag: 'Social', summary: 'Follow', body: S.TargetRequest },
  'POST /unfollowUser': { tag: 'Social', summary: 'Unfollow', body: S.TargetRequest },
  'GET /setupStatus': {
    tag: 'Host',
    summary: 'Whether the host still needs its owner',
    result: 'needsOwnerSetup',
  },
  'POST /setupOwner': {
    tag: 'Host',
    summary: 'Create the Owner with the one-time setup secret the host shows',
    body: S.SetupOwnerRequest,
    result: 'UserData',
  },
  'GET /isInviteCodeRequired': {
    tag: 'Info',
    summary: 'Whether sign-up needs an invite code',
    result: 'inviteCodeRequired',
  },
  'GET /allowAnyGameServer': {
    tag: 'Info',
    summary: 'Whether any game server may connect',
    result: 'allowAnyGameServer',
  },
  'GET /getSocketInfo': { tag: 'Info', summary: 'Where the socket is', result: 'IsWSS, Port' },
  'GET /getCDNs': {
    tag: 'Info',
    summary:
      'This host as its own CDN (1.5 clients): one server, the API base URL the caller can reach, ending in /; they post files to Server + "upload"',
    result: 'servers: [{Server, Latitude, Longitude}]',
  },
  'GET /authForBuilds': {
    tag: 'Builds',
    summary: 'Whether getBuild needs userid + tokenContent',
    result: 'authForBuilds',
  },
  'GET /gameEngine': {
    tag: 'Info',
    summary: 'Game engine and version',
    result: 'GameEngine, GameEngineVersion',
  },
  'GET /getVersions/:name': {
    tag: 'Builds',
    summary: 'Published versions of a client build, newest first (an empty list for a name with none)',
    result: 'Name, Versions',
  },
  'POST /getBuild/:name/:version': {
    tag: 'Builds',
    summary:
      'Download a file of a version (buildArtifact: index into its files sorted by name, default 0); userid + tokenContent when authForBuilds; Range supported',
    body: B.GetBuildRequest,
    binary: true,
  },
  'GET /getBuild/:name/:version/:artifact': {
    tag: 'Builds',
    summary: 'Download link for the UI; ?ticket= from buildTicket when authForBuilds; Range supported',
    binary: true,
  },
  'POST /buildTicket/:name/:version': {
    tag: 'Builds',
    summary: 'A 10-minute download link for one file of a version (signed-in users)',
    body: B.BuildTicketRequest,
    result: 'url, FileName, expiresAt',
  },
  'GET /builds': {
    tag: 'Builds',
    summary: 'Every published client build with its versions and files',
    result: 'authForBuilds, Builds[{Name, Versions[{Version, PublishedAt, PublishedBy, Files[]}]}]',
  },
  'POST /builds/publish': {
    tag: 'Builds',
    summary:
      'Publish a version (admins and the owner): fields userid, tokenContent, name, version first, then one or more "file" parts',
    body: B.PublishBuildFields,
    multipart: true,
    result: 'Build',
  },
  'POST /builds/remove': {
    tag: 'Builds',
    summary: 'Remove a published version and its files (admins and the owner)',
    body: B.RemoveBuildRequest,
    result: 'Build',
  },
  'POST /builds/settings': {
    tag: 'Builds',
    summary: 'Read or set whether downloads need a token (authForBuilds; admins and the owner)',
    body: B.BuildSettingsRequest,
    result: 'authForBuilds',
  },
  'POST /getUsers': {
    tag: 'Accounts',
    summary: `Public views of many users at once (up to ${P.GET_USERS_MAX} ids)`,
    body: P.GetUsersRequest,
    result: 'Users (public views, in the order asked), NotFound (ids no user has)',
  },
  'POST /changePassword': {
    tag: 'Accounts',
    summary:
      'Change your own password (currentPassword required, and twofacode when 2FA is on); signs out every session',
    body: P.ChangeOwnPasswordRequest,
  },
  'POST /resetUserPassword': {
    tag: 'Host',
    summary: 'Set a new password for a user ranked below you (admins and the owner); signs them out',
    body: P.ResetUserPasswordRequest,
  },
  'GET /uploadRules': {
    tag: 'Uploads',
    summary: 'Every rule an upload is checked against: allowed image domains, size, extensions, limits',
    result:
      'allowedImageDomains, localHosts, maxFileBytes, extensions, nameMax, descriptionMax, tagsMax, tagMax, iconsMax, buildPlatforms',
  },
  'POST /hostStatus': {
    tag: 'Host',
    summary:
      'Bind address, LAN addresses, connected users, and the community: storage, database and Redis checked now, ' +
      'hosts (admins and the owner)',
    body: H.HostStatusRequest,
    result: 'bindHost, port, localOnly, openToLan, lanUrls, connectedUsers, requireInviteCode, community',
  },
  'POST /sentInviteRequests': {
    tag: 'Invites',
    summary: 'The invite requests you sent, newest first, with their state',
    body: P.SentInviteRequestsRequest,
    result: 'InviteRequests (each with toUsername)',
  },
  'POST /inviteRequests': {
    tag: 'Invites',
    summary: 'Your received invite requests, newest first',
    body: S.ListInviteRequestsRequest,
    result: 'InviteRequests',
  },
  'POST /updateInviteRequest': {
    tag: 'Invites',
    summary: 'Mark one seen, answered or dismissed (your other sockets hear of it)',
    body: S.UpdateInviteRequestRequest,
    result: 'InviteRequest',
  },
  'POST /moderation': {
    tag: 'Moderation',
    summary:
      'A moderation action on a user of lower rank (Moderator and above); deletefile takes fileId (a file of the target)',
    body: S.ModerationRequest,
    result: 'ModerationState, LogEntry',
  },
  'POST /moderationLog': {
    tag: 'Moderation',
    summary: 'The moderation log, newest first, filtered and paged',
    body: S.ModerationLogRequest,
    result: 'Entries, Total, Page, ItemsPerPage',
  },
  'POST /moderationLookup': {
    tag: 'Moderation',
    summary: 'Users by name prefix or id, with moderation state and recent actions',
    body: S.ModerationLookupRequest,
    result: 'Users',
  },
  'POST /auditLog': {
    tag: 'Moderation',
    summary:
      'Our addition: the audit log (moderation actions and every other staff action), newest first, filtered by action, group, moderator, target and time range, paged',
    body: AL.AuditLogRequest,
    result: 'Entries, Total, Page, ItemsPerPage',
  },
  'POST /auditExport': {
    tag: 'Moderation',
    summary:
      'Our addition (admin and owner): the audit log with the same filters as a CSV or JSON file (Content-Disposition attachment, not an envelope)',
    body: AL.ExportQuery,
    result: 'a file',
  },
  'POST /bansExport': {
    tag: 'Moderation',
    summary:
      'Our addition (admin and owner): the bans in force as a CSV or JSON file (Content-Disposition attachment)',
    body: AL.ExportQuery,
    result: 'a file',
  },
  'POST /importBans': {
    tag: 'Moderation',
    summary:
      'Our addition (admin and owner): bans from an exported file, matched by username; strict refuses the file naming the line, lenient lists what it skipped. Each ban is a banuser action',
    body: AL.BanImportRequest,
    result: 'Imported, Skipped',
  },
  'POST /moderationContent': {
    tag: 'Moderation',
    summary:
      "Our addition: a user's avatars, worlds and files (names, ids, sizes, dates) and their latest remove-all job",
    body: MT.UserContentRequest,
    result: 'Avatars, Worlds, Files, Job',
  },
  'POST /startContentRemoval': {
    tag: 'Moderation',
    summary:
      "Our addition: start removing all content of a user in the background (rank rules per item; one log entry per removal); progress comes as contentjobprogress on moderators' sockets",
    body: MT.ContentJobStartRequest,
    result: 'Job',
  },
  'POST /contentRemovalJob': {
    tag: 'Moderation',
    summary: 'Our addition: the latest remove-all job of a user',
    body: MT.ContentJobsRequest,
    result: 'Job',
  },
  'POST /userNotes': {
    tag: 'Moderation',
    summary: 'Our addition: private notes on a user ranked below you (Moderator and above), newest first',
    body: MT.UserNotesRequest,
    result: 'Notes',
  },
  'POST /addUserNote': {
    tag: 'Moderation',
    summary: 'Our addition: add a private note on a user ranked below you',
    body: MT.AddUserNoteRequest,
    result: 'Note',
  },
  'POST /removeUserNote': {
    tag: 'Moderation',
    summary: 'Our addition: delete a note (its author, or Admin and above)',
    body: MT.RemoveUserNoteRequest,
  },
  'POST /upload': {
    tag: 'Uploads',
    summary:
      'Upload a file (multipart, or JSON with a base64 file); with avatarMeta/worldMeta, create or update an avatar/world build. Also the CDN upload of 1.5 clients (userid, tokenContent, file; attach it with update/avatar or update/world)',
    body: S.MultipartUploadFields,
    multipart: true,
    result: 'UploadData, AvatarId?, WorldId?',
  },
  'POST /update/avatar': {
    tag: 'Uploads',
    summary:
      'With fileid: an uploaded .hna becomes a new avatar or a platform build of one of yours (avatarmeta, a JSON string); without: the details only',
    body: S.UpdateAvatarRequest,
    result: 'with fileid: UploadData, its fields repeated, AvatarId; without: AvatarId',
  },
  'POST /update/world': {
    tag: 'Uploads',
    summary:
      'As update/avatar for worlds (worldmeta); without fileid the ServerScripts of the BuildPlatform build are replaced too',
    body: S.UpdateWorldRequest,
    result: 'with fileid: UploadData, its fields repeated, WorldId; without: WorldId',
  },
  'POST /uploadPart': {
    tag: 'Uploads',
    summary: 'Upload one chunk (any order); the chunk that completes the set gets the whole upload answer',
    body: S.MultipartUploadPartFields,
    multipart: true,
    result: 'chunkNumber, chunkId, received, missingChunks; or the upload answer',
  },
  'POST /uploadPartStatus': {
    tag: 'Uploads',
    summary: 'Which chunks the host holds, to resume',
    body: S.UploadPartStatusRequest,
    result: 'chunkId, originalFileName, amountOfChunks, received, receivedBytes, expiresAt',
  },
  'GET /file/:userid/:fileid': {
    tag: 'Files',
    summary:
      'Download a file (ranges; OwnerOnly builds to their owner via X-Hypernex-UserId and X-Hypernex-Token headers)',
    binary: true,
  },
  'GET /file/:userid/:fileid/:filetoken': {
    tag: 'Files',
    summary: 'Download an OwnerOnly build with an asset token (server scripts: use the game-server route)',
    binary: true,
  },
  'GET /file/:userid/:fileid/:gameServerId/:gameServerToken': {
    tag: 'Files',
    summary:
      'Download a server script as the game server hosting an instance of a world that uses it, with the id and token it got in sendauth',
    binary: true,
  },
  'GET /filemeta/:userid/:fileid': { tag: 'Files', summary: 'A file\u2019s UploadData', result: 'FileMeta' },
  'GET /meta/avatar/:id': {
    tag: 'Files',
    summary:
      'An avatar\u2019s meta with its per-platform builds; an OwnerOnly one has Builds [] except for its owner (X-Hypernex-UserId and X-Hypernex-Token headers) and who may use it',
    result: 'Meta',
  },
  'GET /meta/avatar/:id/:assetToken': {
    tag: 'Files',
    summary: 'An avatar\u2019s whole meta for the holder of a live asset token of it',
    result: 'Meta',
  },
  'GET /meta/world/:id': {
    tag: 'Files',
    summary:
      'A world\u2019s meta with its per-platform builds and server scripts; an OwnerOnly one has Builds [] except for its owner and who may use it',
    result: 'Meta',
  },
  'GET /meta/world/:id/:assetToken': {
    tag: 'Files',
    summary: 'A world\u2019s whole meta for the holder of a live asset token of it',
    result: 'Meta',
  },
  'POST /remove/avatar': {
    tag: 'Files',
    summary: 'Delete an avatar: yours, or as moderation (owner ranked below you; logged)',
    body: S.RemoveAvatarRequest,
  },
  'POST /remove/world': {
    tag: 'Files',
    summary: 'Delete a world: yours, or as moderation (owner ranked below you; logged)',
    body: S.RemoveWorldRequest,
  },
  'POST /remove/file': {
    tag: 'Files',
    summary:
      'Delete a media or script file no build of its owner uses: yours, or as moderation (owner ranked below you; logged)',
    body: S.RemoveFileRequest,
  },
  'POST /getMyContent': {
    tag: 'Files',
    summary: 'Your uploads, avatars and worlds',
    body: S.AuthRequest,
    result: 'Uploads, Avatars, Worlds',
  },
  'POST /instances': {
    tag: 'Instances',
    summary: 'Instances you may join; with worldid, only that world\u2019s',
    body: S.InstancesRequest,
    result: 'SafeInstances',
  },
  'GET /instances/:worldid': {
    tag: 'Instances',
    summary: 'A world\u2019s public (Anyone) instances',
    result: 'SafeInstances',
  },
  'GET /gameServers': { tag: 'Instances', summary: 'Connected game servers', result: 'GameServers' },
  'GET /checkGameServer/:gameServerId': {
    tag: 'Instances',
    summary: 'Whether the game server is connected; true only when the host allows any game server',
    result: 'valid',
  },
  'GET /checkGameServer/:gameServerId/:gameServerToken': {
    tag: 'Instances',
    summary: 'Whether the game server is connected with the token it was handed in sendauth',
    result: 'valid',
  },
  'POST /gameServerTokens': {
    tag: 'Host',
    summary: 'Game-server tokens (admins)',
    body: S.AuthRequest,
    result: 'GameServerTokens',
  },
  'POST /addGameServerToken': {
    tag: 'Host',
    summary: 'Make a game-server token, shown once (admins)',
    body: S.AddGameServerTokenRequest,
    result: 'token, GameServerToken',
  },
  'POST /revokeGameServerToken': {
    tag: 'Host',
    summary: 'Revoke a game-server token; its servers are disconnected (admins)',
    body: S.RevokeGameServerTokenRequest,
  },
  'GET /search/user/:username/:itemsPerPage/:page': {
    tag: 'Search',
    summary: `Users whose name contains the text (${paging})`,
    result: 'Candidates',
  },
  'GET /search/avatar/:name/:itemsPerPage/:page': {
    tag: 'Search',
    summary: `Public avatars whose name contains the text (${paging})`,
    result: 'Candidates',
  },
  'GET /search/world/:name/:itemsPerPage/:page': {
    tag: 'Search',
    summary: `Public worlds whose name contains the text (${paging})`,
    result: 'Candidates',
  },
  'GET /tag/avatar/:tag/:itemsPerPage/:page': {
    tag: 'Search',
    summary: `Public avatars with the tag (${paging})`,
    result: 'Candidates',
  },
  'GET /tag/world/:tag/:itemsPerPage/:page': {
    tag: 'Search',
    summary: `Public worlds with the tag (${paging})`,
    result: 'Candidates',
  },
  'GET /popularity/avatar/:type/:itemsPerPage/:page': {
    tag: 'Search',
    summary: 'Most used public avatars; type 0 Hourly, 1 Daily, 2 Weekly, 3 Monthly, 4 Yearly',
    result: 'Popularity',
  },
  'GET /popularity/world/:type/:itemsPerPage/:page': {
    tag: 'Search',
    summary: 'Most used public worlds; type 0..4 as above',
    result: 'Popularity',
  },
  'GET /popularity/:type/:kind/:tags/:itemsPerPage/:page': {
    tag: 'Search',
    summary:
      'Most used public avatars or worlds carrying any of the comma-separated tags; avatar|world and the window 0..4 in either order',
    result: 'Popularity',
  },
  'POST /manageAssetToken': {
    tag: 'Files',
    summary: 'Add (action 0) or remove (action 1) a one-hour asset token of your avatar or world',
    body: S.ManageAssetTokenRequest,
    result: 'token (on add)',
  },
  'POST /inviteCodes': {
    tag: 'Host',
    summary: 'Invite codes (admins)',
    body: S.AuthRequest,
    result: 'InviteCodes',
  },
  'POST /createInviteCode': {
    tag: 'Host',
    summary:
      'Make an invite code with a number of uses (or unlimited) and an optional expiry, shown once (admins)',
    body: S.CreateInviteCodeRequest,
    result: 'code, InviteCode',
  },
  'POST /revokeInviteCode': {
    tag: 'Host',
    summary: 'Revoke an invite code (admins)',
    body: S.RevokeInviteCodeRequest,
  },
  'POST /hostSettings': {
    tag: 'Host',
    summary: 'Read or change run-time host settings (admins)',
    body: S.HostSettingsRequest,
    result: 'requireInviteCode',
  },
  'POST /webhookSettings': {
    tag: 'Host',
    summary:
      'Read or change the outgoing webhook (admins): url ("" or null removes it; absent keeps it), moderation, signups',
    body: W.WebhookSettingsRequest,
    result: 'Webhook: {configured, maskedUrl (never the whole URL), events, lastDelivery}',
  },
  'POST /testWebhook': {
    tag: 'Host',
    summary: 'Send a test message to the saved webhook URL now (admins); answers how it went',
    body: W.TestWebhookRequest,
    result: 'Delivery: {ok, at, what, attempts, detail}, Webhook',
  },
};

const ENVELOPE = {
  type: 'object',
  required: ['success', 'message'],
  properties: {
    success: { type: 'boolean' },
    message: { type: 'string' },
    result: {
      type: 'object',
      description: 'On failure: {error: {code, fields?}}',
      properties: {
        error: {
          type: 'object',
          properties: {
            code: { type: 'string', enum: Object.values(ErrorCode) },
            fields: { type: 'object', additionalProperties: { type: 'string' } },
          },
        },
      },
    },
  },
};

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    unrepresentable: 'any',
    io: 'input',
  }) as Record<string, unknown>;
  return rest;
}

/** `METHOD /path` for every route of the router, as the document keys them. */
export function routesOf(router: Router, prefix: string): string[] {
  const out = new Set<string>();
  for (const layer of router.stack) {
    const full = String(layer.path);
    const path = full.startsWith(prefix) ? full.slice(prefix.length) : full;
    for (const method of layer.methods) if (method !== 'HEAD') out.add(`${method} ${path}`);
  }
  return [...out].sort();
}

export function buildOpenApi(router: Router, prefix: string, version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const key of routesOf(router, prefix)) {
    const [method, path] = key.split(' ') as [string, string];
    const doc = ROUTE_DOCS[key];
    const openPath = `${prefix}${path}`.replace(/:(\w+)/g, '{$1}');
    const params = [...path.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const operation: Record<string, unknown> = {
      summary: doc?.summary ?? 'Undocumented',
      tags: [doc?.tag ?? 'Other'],
      ...(params.length > 0 && { parameters: params }),
      responses: {
        200: {
          description: doc?.binary
            ? 'The file bytes with Content-Disposition: attachment (or an envelope explaining the refusal)'
            : `Envelope. ${doc?.result ? `result on success: ${doc.result}.` : ''}`.trim(),
          content: doc?.binary
            ? {
                'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
                'application/json': { schema: ENVELOPE },
              }
            : { 'application/json': { schema: ENVELOPE } },
        },
      },
    };
    if (doc?.query) {
      const schema = jsonSchema(doc.query) as { properties?: Record<string, unknown>; required?: string[] };
      operation.parameters = [
        ...((operation.parameters as unknown[]) ?? []),
        ...Object.entries(schema.properties ?? {}).map(([name, s]) => ({
          name,
          in: 'query',
          required: schema.required?.includes(name) ?? false,
          schema: s,
        })),
      ];
    }
    if (doc?.body) {
      const schema = jsonSchema(doc.body);
      operation.requestBody = {
        required: true,
        content: doc.multipart
          ? { 'multipart/form-data': { schema } }
          : { 'application/json': { schema }, 'application/x-www-form-urlencoded': { schema } },
      };
    }
    paths[openPath] ??= {};
    paths[openPath][method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Hypernex Companion host API',
      version,
      description:
        'A Hypernex 1.4-compatible API. Every answer is HTTP 200 with {success, message, result}. ' +
        `Authenticated calls carry ${auth}. The socket is a WebSocket on the same port (any path).`,
    },
    paths,
  };
}

const escape = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/** A readable page of the same document, with no script (the UI's CSP applies). */
export function renderApiPage(document: Record<string, unknown>): string {
  const paths = document.paths as Record<
    string,
    Record<
      string,
      { summary: string; tags: string[]; requestBody?: unknown; responses: { 200: { description: string } } }
    >
  >;
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const body = op.requestBody
        ? `<details><summary>request</summary><pre>${escape(JSON.stringify(op.requestBody, null, 2))}</pre></details>`
        : '';
      const row = `<tr><td><code>${method.toUpperCase()}</code></td><td><code>${escape(path)}</code></td><td>${escape(op.summary)}<br><small>${escape(op.responses[200].description)}</small>${body}</td></tr>`;
      const tag = op.tags[0] ?? 'Other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), row]);
    }
  }
  const sections = [...byTag.entries()]
    .map(([tag, rows]) => `<h2>${escape(tag)}</h2><table><tbody>${rows.join('')}</tbody></table>`)
    .join('');
  const info = document.info as { title: string; description: string; version: string };
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(info.title)}</title><style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem;background:#111318;color:#e6e8ef}a{color:#9d8cff}table{width:100%;border-collapse:collapse;margin-bottom:1.5rem}td{border-top:1px solid #2a2e3a;padding:.45rem;vertical-align:top}code{color:#7fd1c7}pre{white-space:pre-wrap;background:#1a1d26;padding:.5rem;border-radius:6px}small{color:#9aa0b4}</style></head><body><h1>${escape(info.title)} <small>${escape(info.version)}</small></h1><p>${escape(info.description)}</p><p>Machine-readable: <a href="openapi.json">openapi.json</a> (OpenAPI 3.1).</p>${sections}</body></html>`;
}
