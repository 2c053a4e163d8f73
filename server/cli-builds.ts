import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultDataDir } from './config.js';
import { AppError } from './errors.js';
import { inspectDataFolder } from './store/data-folder.js';
import { createBuildsService } from './services/builds.js';
import { systemClock } from './services/context.js';

export const BUILDS_HELP = `Usage:
  hypernex-companion builds add NAME VERSION FILE... [--data-dir DIR]
  hypernex-companion builds list [NAME] [--data-dir DIR]
  hypernex-companion builds remove NAME VERSION [--data-dir DIR]
  hypernex-companion builds require-token on|off [--data-dir DIR]

Client builds the host hands its players (launcher, game client, CCK, game server) through the Downloads screen
and the real clients' getVersions/getBuild calls. They are plain files under DIR/builds/NAME/VERSION/; these
commands work whether or not a host is running on the folder.

  add             publish VERSION of NAME with one or more files (a published version is never replaced)
  list            published names, versions (newest first) and files
  remove          unpublish a version and delete its files
  require-token   whether downloads need a signed-in token (authForBuilds)

Names the official launcher asks for: Hypernex.Launcher, Hypernex.Unity, Hypernex.CCK, Hypernex.Networking.Server.

Options:
  --data-dir DIR   data folder (default: ${defaultDataDir()})
  -h, --help       this help
`;

export class BuildsUsageError extends Error {}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** `hypernex-companion builds ...`; returns the exit code. Refusals name the field they are about. */
export async function buildsCommand(argv: string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (error) {
    if (error instanceof AppError) {
      const fields = Object.entries(error.fields ?? {}).map(([field, reason]) => `${field} ${reason}`);
      throw new AppError(
        error.code,
        fields.length > 0 ? `${error.message} ${fields.join('; ')}` : error.message,
      );
    }
    throw error;
  }
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  const [action, ...args] = positionals;
  if (values.help || action === undefined) {
    process.stdout.write(BUILDS_HELP);
    return values.help ? 0 : 1;
  }
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const { kind } = await inspectDataFolder(dataDir);
  if (kind !== 'ours' && kind !== 'files') {
    throw new BuildsUsageError(
      `${dataDir} is not a Hypernex Companion data folder${kind === 'foreign' ? '' : ' yet (start the host on it once)'}`,
    );
  }
  const builds = createBuildsService({
    dataDir,
    fsync: true,
    clock: systemClock,
    maxFileBytes: Number.MAX_SAFE_INTEGER,
  });
  const out = (text: string): void => void process.stdout.write(text);

  switch (action) {
    case 'add': {
      const [name, version, ...files] = args;
      if (name === undefined || version === undefined || files.length === 0)
        throw new BuildsUsageError('builds add needs NAME VERSION and at least one FILE');
      for (const file of files) {
        const info = await stat(file).catch(() => null);
        if (!info?.isFile()) throw new BuildsUsageError(`${file} is not a file`);
      }
      const published = await builds.publishFiles(
        name,
        version,
        files.map((file) => ({ fileName: basename(file), open: () => createReadStream(file) })),
        'cli',
      );
      out(`published ${published.Name} ${published.Version}\n`);
      for (const file of published.Files) out(`  [${file.Index}] ${file.FileName} (${size(file.Size)})\n`);
      return 0;
    }
    case 'list': {
      const [only] = args;
      const all = await builds.list();
      const shown = only === undefined ? all : all.filter((b) => b.Name.toLowerCase() === only.toLowerCase());
      out(`downloads need a token: ${(await builds.authForBuilds()) ? 'yes' : 'no'}\n`);
      if (shown.length === 0) out(only === undefined ? 'no builds published\n' : `no builds of ${only}\n`);
      for (const build of shown) {
        out(`${build.Name}\n`);
        for (const version of build.Versions) {
          const when = new Date(version.PublishedAt * 1000).toISOString().replace('.000Z', 'Z');
          out(`  ${version.Version}  published ${when}\n`);
          for (const file of version.Files)
            out(`    [${file.Index}] ${file.FileName} (${size(file.Size)})\n`);
        }
      }
      return 0;
    }
    case 'remove': {
      const [name, version] = args;
      if (name === undefined || version === undefined || args.length !== 2)
        throw new BuildsUsageError('builds remove needs NAME VERSION');
      const removed = await builds.remove(name, version);
      out(`removed ${removed.Name} ${removed.Version} (${removed.Files.length} file(s))\n`);
      return 0;
    }
    case 'require-token': {
      const [value] = args;
      if (value !== 'on' && value !== 'off')
        throw new BuildsUsageError('builds require-token takes on or off');
      await builds.setAuthForBuilds(value === 'on');
      out(`downloads need a token: ${value === 'on' ? 'yes' : 'no'}\n`);
      return 0;
    }
    default:
      throw new BuildsUsageError(`unknown builds command ${JSON.stringify(action)}`);
  }
}
