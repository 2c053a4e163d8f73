import { z } from 'zod';

/**
 * Client builds (SPEC section 8, wire reference 1.6): programs the host hands its players (launcher, game client,
 * CCK, game server), by name and version. Names, versions and file names become folder and file names in the data
 * folder, so they are checked here, the same way on the server and in the UI.
 */

/** The names the official launcher and dashboard ask for; any other valid name may be published too. */
export const KNOWN_BUILD_NAMES = [
  'Hypernex.Launcher',
  'Hypernex.Unity',
  'Hypernex.CCK',
  'Hypernex.Networking.Server',
] as const;

export const BUILD_NAME_MAX = 64;
export const BUILD_VERSION_MAX = 64;
export const BUILD_FILE_NAME_MAX = 128;
/** Files in one version. */
export const BUILD_FILES_MAX = 32;

/** Starts with a letter or digit, then letters, digits and `. _ -` (so never `.`, `..`, a slash or a drive). */
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** As a name, plus `+` (semver build metadata). */
const VERSION_RE = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;
/** As a version, plus spaces and parentheses inside; never ending in a dot or space (Windows drops those). */
const FILE_RE = /^[A-Za-z0-9][A-Za-z0-9 ._+()-]*$/;
/** Names Windows reserves whatever the extension. */
const WINDOWS_RESERVED = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;

/** Why a build name is unusable, or null when it is fine. */
export function buildNameProblem(name: string): string | null {
  if (name.length === 0) return 'is required';
  if (name.length > BUILD_NAME_MAX) return `must be at most ${BUILD_NAME_MAX} characters`;
  if (!NAME_RE.test(name))
    return 'must start with a letter or digit and hold only letters, digits, dots, underscores and dashes';
  if (WINDOWS_RESERVED.test(name)) return 'is a reserved file name';
  return null;
}

export function buildVersionProblem(version: string): string | null {
  if (version.length === 0) return 'is required';
  if (version.length > BUILD_VERSION_MAX) return `must be at most ${BUILD_VERSION_MAX} characters`;
  if (!VERSION_RE.test(version))
    return 'must start with a letter or digit and hold only letters, digits and . _ + -';
  if (WINDOWS_RESERVED.test(version)) return 'is a reserved file name';
  return null;
}

export function buildFileNameProblem(fileName: string): string | null {
  if (fileName.length === 0) return 'is required';
  if (fileName.length > BUILD_FILE_NAME_MAX) return `must be at most ${BUILD_FILE_NAME_MAX} characters`;
  if (!FILE_RE.test(fileName) || /[. ]$/.test(fileName))
    return 'must start with a letter or digit, hold only letters, digits, spaces and . _ + ( ) -, and not end in a dot or space';
  if (WINDOWS_RESERVED.test(fileName)) return 'is a reserved file name';
  return null;
}

const buildName = z.string().superRefine((value, ctx) => {
  const problem = buildNameProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
const buildVersion = z.string().superRefine((value, ctx) => {
  const problem = buildVersionProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
const id = z.string().min(1).max(200);
const token = z.string().min(1).max(512);

/** One file of a published version; `Index` is the `buildArtifact` that fetches it. */
export interface BuildFileDto {
  Index: number;
  FileName: string;
  Size: number;
  /** SHA-256 of the bytes, hex. */
  Hash: string;
}

export interface BuildVersionDto {
  Name: string;
  Version: string;
  /** Unix seconds. */
  PublishedAt: number;
  /** Who published it: a user id, or "cli" for the command line. */
  PublishedBy: string;
  /** Sorted by file name, as the real server lists a version's folder. */
  Files: BuildFileDto[];
}

/** `GET builds`: every name with its versions, newest first. */
export interface BuildListDto {
  authForBuilds: boolean;
  Builds: Array<{ Name: string; Versions: BuildVersionDto[] }>;
}

/**
 * `POST getBuild/:name/:version` body (reference 1.6). Loose on purpose: a missing or odd buildArtifact means 0, as
 * the real server; credentials are checked only when the host requires them.
 */
export const GetBuildRequest = z.object({
  buildArtifact: z.unknown().optional(),
  userid: z.unknown().optional(),
  tokenContent: z.unknown().optional(),
});

/** Multipart fields of `POST builds/publish`; they must come before the file parts. */
export const PublishBuildFields = z.object({
  userid: id,
  tokenContent: token,
  name: buildName,
  version: buildVersion,
});

export const RemoveBuildRequest = z.object({
  userid: id,
  tokenContent: token,
  name: buildName,
  version: buildVersion,
});

export const BuildSettingsRequest = z.object({
  userid: id,
  tokenContent: token,
  authForBuilds: z.boolean().optional(),
});

export const BuildTicketRequest = z.object({
  userid: id,
  tokenContent: token,
  buildArtifact: z.number().int().min(0).max(BUILD_FILES_MAX).optional(),
});

/** The artifact index as the real server reads it: a whole number in range, else 0. */
export function artifactIndex(raw: unknown, count: number): number {
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < count ? n : 0;
}

/**
 * Newest first: by publication time, then by version with numbers compared as numbers (1.10 after 1.9), so
 * versions published in the same second still come out in a sensible order.
 */
export function compareVersionsNewestFirst(a: BuildVersionDto, b: BuildVersionDto): number {
  if (a.PublishedAt !== b.PublishedAt) return b.PublishedAt - a.PublishedAt;
  return b.Version.localeCompare(a.Version, 'en', { numeric: true });
}
