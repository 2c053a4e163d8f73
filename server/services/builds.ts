import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ErrorCode } from '../protocol/errors.js';
import {
  artifactIndex,
  BUILD_FILES_MAX,
  buildFileNameProblem,
  buildNameProblem,
  buildVersionProblem,
  compareVersionsNewestFirst,
  type BuildFileDto,
  type BuildVersionDto,
} from '../protocol/builds.js';
import { AppError } from '../errors.js';
import { syncDir, writeFileAtomic } from '../store/durable-file.js';
import { unixSeconds, type Clock } from './context.js';

/**
 * Client builds as plain files (SPEC section 8): `<dataDir>/builds/<name>/<version>/<files>` plus a manifest per
 * version, the layout of the real server with the manifest as the mark of a complete version. Nothing here is in
 * the store: every answer reads the folders, so `hypernex-companion builds ...` may change them while a host runs.
 *
 * A version is published whole or not at all: its files stream into a private folder under `.staging/`, the
 * manifest is written there last (atomically), and the folder is renamed into place in one step. A rename onto a
 * version that already holds files fails, so two publishers of one version cannot both win. Removal renames the
 * version away first, so readers never see half of one.
 */

export const MANIFEST = '.companion-build.json';
const STAGING = '.staging';
const SETTINGS = '.settings.json';
/** Staging folders older than this are leftovers of a crash or a killed command. */
const STAGING_STALE_MS = 60 * 60 * 1000;

export interface BuildsDeps {
  dataDir: string;
  fsync: boolean;
  clock: Clock;
  /** Largest single file of a version, in bytes. */
  maxFileBytes: number;
  /** Whether getBuild needs a token until an admin says otherwise. */
  defaultAuthForBuilds?: boolean;
}

/** A version being published: add its files, then commit, or abort (always safe to call, also after commit). */
export interface Publication {
  readonly name: string;
  readonly version: string;
  addFile(fileName: string, source: NodeJS.ReadableStream): Promise<Omit<BuildFileDto, 'Index'>>;
  commit(publishedBy: string): Promise<BuildVersionDto>;
  abort(): Promise<void>;
}

interface Settings {
  authForBuilds: boolean;
}

function invalid(fields: Record<string, string>, message = 'Invalid parameters!'): AppError {
  return new AppError(ErrorCode.INVALID_PARAMETERS, message, fields);
}

/** Throws INVALID_PARAMETERS naming the field, unless name and version are usable as folder names. */
export function checkNameAndVersion(name: unknown, version: unknown): { name: string; version: string } {
  const fields: Record<string, string> = {};
  const nameProblem = typeof name === 'string' ? buildNameProblem(name) : 'is required';
  const versionProblem = typeof version === 'string' ? buildVersionProblem(version) : 'is required';
  if (nameProblem) fields.name = nameProblem;
  if (versionProblem) fields.version = versionProblem;
  if (Object.keys(fields).length > 0) throw invalid(fields);
  return { name: name as string, version: version as string };
}

async function entries(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
      .map((e) => e.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** The folder name matching `wanted`: exact, else ignoring case (so one name is one folder on every system). */
function match(names: string[], wanted: string): string | undefined {
  return names.find((n) => n === wanted) ?? names.find((n) => n.toLowerCase() === wanted.toLowerCase());
}

async function readManifest(dir: string): Promise<BuildVersionDto | null> {
  let text: string;
  try {
    text = await readFile(join(dir, MANIFEST), 'utf8');
  } catch {
    // No manifest: not a published version (a copy in progress, or somebody's own folder).
    return null;
  }
  try {
    const parsed = JSON.parse(text) as BuildVersionDto;
    if (typeof parsed.Version !== 'string' || !Array.isArray(parsed.Files)) return null;
    return parsed;
  } catch {
    return null;
  }
}

async function versionsIn(nameDir: string): Promise<BuildVersionDto[]> {
  const out: BuildVersionDto[] = [];
  for (const folder of await entries(nameDir)) {
    const manifest = await readManifest(join(nameDir, folder));
    if (manifest) out.push(manifest);
  }
  return out.sort(compareVersionsNewestFirst);
}

async function locate(
  root: string,
  name: string,
  version: string,
): Promise<{ dir: string; manifest: BuildVersionDto } | null> {
  if (buildNameProblem(name) || buildVersionProblem(version)) return null;
  const nameFolder = match(await entries(root), name);
  if (!nameFolder) return null;
  const versionFolder = match(await entries(join(root, nameFolder)), version);
  if (!versionFolder) return null;
  const dir = join(root, nameFolder, versionFolder);
  const manifest = await readManifest(dir);
  return manifest ? { dir, manifest } : null;
}

async function readSettings(root: string, defaultAuthForBuilds: boolean | undefined): Promise<Settings> {
  try {
    const parsed = JSON.parse(await readFile(join(root, SETTINGS), 'utf8')) as Partial<Settings>;
    if (typeof parsed.authForBuilds === 'boolean') return { authForBuilds: parsed.authForBuilds };
  } catch {
    // No settings yet (or unreadable): the default holds.
  }
  return { authForBuilds: defaultAuthForBuilds ?? false };
}

/** Streams one file into `path` (never replacing one), with its SHA-256, refusing it past the size limit. */
async function receive(
  deps: Pick<BuildsDeps, 'maxFileBytes' | 'fsync'>,
  source: NodeJS.ReadableStream,
  path: string,
): Promise<{ Size: number; Hash: string }> {
  const { maxFileBytes, fsync } = deps;
  const sha = createHash('sha256');
  let size = 0;
  const handle = await open(path, 'wx');
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > maxFileBytes) {
        done(
          new AppError(
            ErrorCode.FILE_TOO_LARGE,
            `Failed to publish build! A file is larger than this host allows (${maxFileBytes} bytes).`,
          ),
        );
        return;
      }
      sha.update(chunk);
      done(null, chunk);
    },
  });
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      handle.write(chunk).then(() => done(), done);
    },
  });
  try {
    await pipeline(source, counter, sink);
    if (fsync) await handle.sync();
  } finally {
    await handle.close();
  }
  return { Size: size, Hash: sha.digest('hex') };
}

/**
 * Renames the staged version `dir` into place under `nameDir`; refused when the version was published meanwhile
 * (a rename onto a folder that holds files fails).
 */
async function moveIntoPlace(dir: string, nameDir: string, name: string, version: string): Promise<void> {
  const target = join(nameDir, version);
  for (let attempt = 0; ; attempt++) {
    await mkdir(nameDir, { recursive: true });
    try {
      await rename(dir, target);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // The name folder went away (its last version removed meanwhile): make it again, once.
      if (code === 'ENOENT' && attempt === 0) continue;
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'EPERM') {
        throw new AppError(
          ErrorCode.BUILD_EXISTS,
          `Failed to publish build! ${name} ${version} was published meanwhile.`,
          { version: 'is already published' },
        );
      }
      throw error;
    }
  }
}

/** Why a file may not join a publication (closed, a bad or repeated name, one too many), or null. */
function fileRefusal(state: string, fileName: string, reserved: ReadonlySet<string>): string | null {
  const problem = buildFileNameProblem(fileName);
  return state !== 'open'
    ? 'arrived after the publication closed'
    : problem
      ? problem
      : reserved.has(fileName.toLowerCase())
        ? 'is sent twice'
        : reserved.size >= BUILD_FILES_MAX
          ? `is one too many (at most ${BUILD_FILES_MAX} files per version)`
          : null;
}

/** A publication of `name` `version` whose files stream into the staging folder `dir`. */
function stagedPublication(
  deps: BuildsDeps,
  root: string,
  name: string,
  version: string,
  dir: string,
): Publication {
  const { fsync, clock } = deps;
  const files = new Map<string, Omit<BuildFileDto, 'Index'>>();
  /** File names taken so far, lowercased (one folder on Windows and macOS). */
  const reserved = new Set<string>();
  let state: 'open' | 'committed' | 'aborted' = 'open';

  return {
    name,
    version,
    async addFile(fileName, source) {
      const refusal = fileRefusal(state, fileName, reserved);
      if (refusal) {
        source.resume();
        throw invalid(
          { file: `${fileName} ${refusal}` },
          `Failed to publish build! The file ${JSON.stringify(fileName)} ${refusal}.`,
        );
      }
      // Taken before the bytes arrive: the next part may start while this one is still being written.
      reserved.add(fileName.toLowerCase());
      const got = await receive(deps, source, join(dir, fileName));
      const entry = { FileName: fileName, Size: got.Size, Hash: got.Hash };
      files.set(fileName, entry);
      return entry;
    },

    async commit(publishedBy) {
      if (state !== 'open') throw new Error('publication already closed');
      if (files.size === 0) {
        throw new AppError(ErrorCode.NO_FILE, 'Failed to publish build! Send at least one file.', {
          file: 'is required',
        });
      }
      const sorted = [...files.values()].sort((a, b) => (a.FileName < b.FileName ? -1 : 1));
      const manifest: BuildVersionDto = {
        Name: name,
        Version: version,
        PublishedAt: unixSeconds(clock),
        PublishedBy: publishedBy,
        Files: sorted.map((f, Index) => ({ Index, ...f })),
      };
      await writeFileAtomic(join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, fsync);
      const nameDir = join(root, name);
      await moveIntoPlace(dir, nameDir, name, version);
      state = 'committed';
      if (fsync) {
        await syncDir(nameDir);
        await syncDir(root);
      }
      return manifest;
    },

    async abort() {
      if (state !== 'open') return;
      state = 'aborted';
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export function createBuildsService(deps: BuildsDeps) {
  const { dataDir, fsync } = deps;
  const root = join(dataDir, 'builds');
  const staging = join(root, STAGING);

  async function ensureRoot(): Promise<void> {
    await mkdir(staging, { recursive: true });
  }

  const service = {
    root,

    /** Removes staging folders a crash or a killed command left behind. */
    async init(): Promise<void> {
      let names: string[];
      try {
        names = await readdir(staging);
      } catch {
        return;
      }
      const now = Date.now();
      for (const name of names) {
        const info = await stat(join(staging, name)).catch(() => null);
        if (info && now - info.mtimeMs > STAGING_STALE_MS)
          await rm(join(staging, name), { recursive: true, force: true });
      }
    },

    async authForBuilds(): Promise<boolean> {
      return (await readSettings(root, deps.defaultAuthForBuilds)).authForBuilds;
    },

    async setAuthForBuilds(value: boolean): Promise<void> {
      await mkdir(root, { recursive: true });
      await writeFileAtomic(join(root, SETTINGS), `${JSON.stringify({ authForBuilds: value })}\n`, fsync);
    },

    /** Every published name with its versions, newest first; names sorted. */
    async list(): Promise<Array<{ Name: string; Versions: BuildVersionDto[] }>> {
      const out: Array<{ Name: string; Versions: BuildVersionDto[] }> = [];
      for (const folder of (await entries(root)).sort()) {
        const versions = await versionsIn(join(root, folder));
        if (versions.length > 0) out.push({ Name: folder, Versions: versions });
      }
      return out;
    },

    /** The versions of `name`, newest first; none for a name with no builds (or one that cannot be a name). */
    async versions(name: string): Promise<BuildVersionDto[]> {
      if (buildNameProblem(name)) return [];
      const folder = match(await entries(root), name);
      return folder ? versionsIn(join(root, folder)) : [];
    },

    async find(name: string, version: string): Promise<BuildVersionDto | null> {
      return (await locate(root, name, version))?.manifest ?? null;
    },

    /**
     * The file `buildArtifact` picks in a version (out of range or not a whole number: the first, as the real
     * server), with its path; null when the version or its file is not there.
     */
    async artifact(
      name: string,
      version: string,
      buildArtifact: unknown,
    ): Promise<{ path: string; file: BuildFileDto; size: number } | null> {
      const found = await locate(root, name, version);
      if (!found || found.manifest.Files.length === 0) return null;
      const file = found.manifest.Files[artifactIndex(buildArtifact, found.manifest.Files.length)];
      if (!file || buildFileNameProblem(file.FileName)) return null;
      const path = join(found.dir, file.FileName);
      const info = await stat(path).catch(() => null);
      if (!info?.isFile()) return null;
      return { path, file, size: info.size };
    },

    /** Starts publishing `name` `version`; refused when the names are unusable or the version exists. */
    async begin(rawName: unknown, rawVersion: unknown): Promise<Publication> {
      const { name: asked, version } = checkNameAndVersion(rawName, rawVersion);
      await ensureRoot();
      // A name already published keeps its spelling; versions differing only in case would be one folder on
      // Windows and macOS, so they count as the same version everywhere.
      const name = match(await entries(root), asked) ?? asked;
      if (match(await entries(join(root, name)), version) !== undefined) {
        throw new AppError(
          ErrorCode.BUILD_EXISTS,
          `Failed to publish build! ${name} ${version} is already published; remove it first or pick another version.`,
          { version: 'is already published' },
        );
      }
      const dir = join(staging, `${Date.now()}-${randomBytes(8).toString('hex')}`);
      await mkdir(dir);
      return stagedPublication(deps, root, name, version, dir);
    },

    /** Publishes files from disk (the CLI), each streamed, never read whole. */
    async publishFiles(
      name: string,
      version: string,
      files: Array<{ fileName: string; open: () => NodeJS.ReadableStream }>,
      publishedBy: string,
    ): Promise<BuildVersionDto> {
      const publication = await service.begin(name, version);
      try {
        for (const file of files) await publication.addFile(file.fileName, file.open());
        return await publication.commit(publishedBy);
      } finally {
        await publication.abort();
      }
    },

    /** Unpublishes a version and deletes its files. */
    async remove(name: string, version: string): Promise<BuildVersionDto> {
      checkNameAndVersion(name, version);
      const found = await locate(root, name, version);
      if (!found) throw new AppError(ErrorCode.BUILD_NOT_FOUND, `No build ${name} ${version} is published.`);
      await ensureRoot();
      const away = join(staging, `removed-${Date.now()}-${randomBytes(8).toString('hex')}`);
      await rename(found.dir, away);
      const nameDir = join(found.dir, '..');
      if (fsync) await syncDir(nameDir);
      await rm(away, { recursive: true, force: true });
      // An emptied name folder goes too; a publisher that just made it again simply makes it once more.
      if ((await readdir(nameDir).catch(() => ['?'])).length === 0)
        await rmdir(nameDir).catch(() => undefined);
      return found.manifest;
    },
  };
  return service;
}

export type BuildsService = ReturnType<typeof createBuildsService>;
