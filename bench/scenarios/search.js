// Search: name searches and tag queries with many users, avatars and worlds; popularity rankings read while
// public avatar builds are downloaded.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { BenchError, cpuWindow, startHost } from '../harness/host.js';
import { httpLoad, post } from '../harness/http.js';
import { seed } from '../harness/seed.js';

const WORDS = (
  'neon cyber dark tiny cozy retro pastel shadow crystal frost ember storm golden silver lunar cosmic haunted ' +
  'fox wolf angel demon knight ninja kitty bunny dragon robot ghost witch pirate samurai raven tiger panda ' +
  'forest castle tower city beach club cafe arena dungeon garden island lake station temple lounge rooftop'
).split(' ');
const SYLLABLES =
  'ka ri mo to shi na lu ve xa zen dra gon fi el ar thor mi ra ko sa ne on ly ix ae bel cor'.split(' ');
const TAGS =
  'anime cute furry robot scifi fantasy horror chill music dance social game pvp quest art nature meme vr'.split(
    ' ',
  );
const WINDOWS = ['Hourly', 'Daily', 'Weekly', 'Monthly', 'Yearly'];
const PAGES = [10, 25, 50, 100];
const pick = (list) => list[Math.floor(Math.random() * list.length)];
const cap = (w) => w[0].toUpperCase() + w.slice(1);
const pseudo = () => cap(pick(SYLLABLES) + pick(SYLLABLES) + (Math.random() < 0.5 ? pick(SYLLABLES) : ''));
const assetName = () =>
  Math.random() < 0.5 ? `${cap(pick(WORDS))} ${cap(pick(WORDS))}` : `${pseudo()} the ${cap(pick(WORDS))}`;
/** Skewed: a few tags are very common, most rare. */
const tags = () => [
  ...new Set(
    Array.from(
      { length: 1 + Math.floor(Math.random() * 3) },
      () => TAGS[Math.floor(TAGS.length * Math.random() ** 2)],
    ),
  ),
];

/** Search requests: 1-3 letters of a word or a whole word, on random pages; every listed id known and matching. */
function searches({ users, assets }) {
  const names = { user: users, avatar: assets.avatar, world: assets.world };
  return () => {
    const kind = pick([
      'user',
      'user',
      'avatar',
      'avatar',
      'avatar',
      'world',
      'world',
      'avatarTag',
      'avatarTag',
      'worldTag',
    ]);
    const per = pick(PAGES);
    const page = `${per}/${Math.floor(5 * Math.random() ** 2)}`;
    const tagged = kind.endsWith('Tag');
    const of = kind.replace('Tag', '');
    const word = pick(WORDS.concat(SYLLABLES));
    const text = tagged
      ? pick(TAGS)
      : Math.random() < 0.5
        ? word.slice(0, 1 + Math.floor(Math.random() * 3))
        : word;
    const matches = (id) => {
      const known = names[of].get(id);
      if (!known) return `unknown ${of} ${id}`;
      if (known.ownerOnly) return `OwnerOnly ${of} ${id} listed`;
      return (tagged ? known.tags.includes(text) : known.name.includes(text))
        ? null
        : `${id} does not match ${text}`;
    };
    return {
      path: tagged
        ? `/api/v1/tag/${of}/${text}/${page}`
        : `/api/v1/search/${of}/${encodeURIComponent(text)}/${page}`,
      check: (a) => {
        const list = a.result?.Candidates;
        if (!Array.isArray(list) || list.length > per) return 'no Candidates page';
        return list.map(matches).find(Boolean) ?? null;
      },
    };
  };
}

export default {
  describe:
    'Name searches (users, avatars, worlds) and tag queries on random pages with many users, avatars and worlds ' +
    '(~10% OwnerOnly, which must never be listed); then popularity rankings read while public avatar builds ' +
    'uploaded over HTTP are downloaded (each download a use; the uses counted must match).',
  options: {
    users: { default: 10_000, help: 'users' },
    avatars: { default: 20_000, help: 'avatars' },
    worlds: { default: 5000, help: 'worlds' },
    popular: { default: 300, help: 'public avatars uploaded with a real build (the downloaded ones)' },
    clients: { default: 64, help: 'concurrent clients' },
    downloaders: { default: 16, help: 'of those, clients downloading in the popularity phase' },
    'check-every': { default: 8, help: 'check every Nth answer in full (the others: success only)' },
    warmup: { default: 1, help: 'seconds of unreported search load first' },
  },
  seed: (ctx) =>
    seed(ctx, async (api) => {
      const o = ctx.options;
      const users = new Map();
      const assets = { avatar: new Map(), world: new Map() };
      const records = [];
      for (let i = 0; i < o.users; i++) {
        const user = api.newUser({ username: `${pseudo()}${i}` });
        users.set(user.id, { name: user.username.toLowerCase() });
        records.push(user);
      }
      for (const [kind, count] of [
        ['avatar', o.avatars - o.popular],
        ['world', o.worlds],
      ]) {
        for (let i = 0; i < count; i++) {
          const owner = records[Math.floor(Math.random() * records.length)];
          const record = {
            Id: api.ids.id(kind),
            OwnerId: owner.id,
            Publicity: Math.random() < 0.1 ? 1 : 0,
            Name: assetName(),
            Description: `A ${kind} for the search bench.`,
            Tags: tags(),
            ...(kind === 'avatar' ? { ImageURL: '' } : { ThumbnailURL: '', IconURLs: [] }),
            Builds: [
              {
                FileId: api.ids.id('file'),
                BuildPlatform: 0,
                ...(kind === 'world' && { ServerScripts: [] }),
              },
            ],
            DateCreated: api.now,
            DateUpdated: api.now,
          };
          owner.record[kind === 'avatar' ? 'Avatars' : 'Worlds'].push(record.Id);
          assets[kind].set(record.Id, {
            name: record.Name.toLowerCase(),
            tags: record.Tags,
            ownerOnly: record.Publicity === 1,
          });
          await api.put(`${kind}s`, record);
        }
      }
      for (const user of records) await api.put('users', user.record);
      return { users, assets, uploaders: records.slice(0, 100) };
    }),

  async load(ctx, data) {
    const o = ctx.options;
    const host = await startHost(ctx);
    ctx.progress(`uploading ${o.popular} public avatars with builds ...`);
    const builds = [];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (builds.length < o.popular) {
          const user = pick(data.uploaders);
          const build = { size: 8192 };
          builds.push(build);
          const meta = {
            Publicity: 0,
            Name: assetName(),
            Description: '',
            Tags: tags(),
            ImageURL: '',
            BuildPlatform: 0,
          };
          const file = { name: 'bench.hna', data: randomBytes(build.size).toString('base64') };
          const a = await post(host.url, 'upload', {
            userid: user.id,
            tokenContent: user.token,
            file,
            avatarMeta: meta,
          });
          Object.assign(build, {
            userId: user.id,
            fileId: a.result.UploadData.FileId,
            id: a.result.AvatarId,
          });
          data.assets.avatar.set(build.id, {
            name: meta.Name.toLowerCase(),
            tags: meta.Tags,
            ownerOnly: false,
          });
        }
      }),
    );
    const popular = new Set(builds.map((b) => b.id));
    const load = (connections, next, extra) =>
      httpLoad(host.url, { connections, seconds: o.seconds, next, ...extra });
    if (o.warmup > 0)
      await httpLoad(host.url, { connections: o.clients, seconds: o.warmup, next: searches(data) });
    ctx.progress(`searches, ${o.clients} clients ...`);
    let end = await cpuWindow(host.pid);
    const search = await ctx.guard(load(o.clients, searches(data), { checkEvery: o['check-every'] }));
    const searchCpu = await end();
    ctx.progress(`popularity: ${o.downloaders} downloading, ${o.clients - o.downloaders} reading ...`);
    const download = () => {
      const b = builds[Math.floor(builds.length * Math.random() ** 3)];
      const check = (_body, headers) => {
        const length = Object.entries(headers).find(([key]) => key.toLowerCase() === 'content-length')?.[1];
        return Number(length) === b.size ? null : `a download of ${length} bytes`;
      };
      return { path: `/api/v1/file/${b.userId}/${b.fileId}`, check };
    };
    const ranking = () => {
      const type = Math.floor(Math.random() * WINDOWS.length);
      const per = pick(PAGES);
      const check = (a) => {
        let previous = Infinity;
        for (const entry of a.result?.Popularity ?? []) {
          if (!popular.has(entry.Id)) return `never downloaded: ${entry.Id}`;
          if (!(entry[WINDOWS[type]].Usages > 0 && entry[WINDOWS[type]].Usages <= previous))
            return 'out of order';
          previous = entry[WINDOWS[type]].Usages;
        }
        return a.result?.Popularity?.length <= per ? null : 'no Popularity page';
      };
      return { path: `/api/v1/popularity/avatar/${type}/${per}/${Math.floor(Math.random() * 3)}`, check };
    };
    end = await cpuWindow(host.pid);
    const [downloads, readings] = await ctx.guard(
      Promise.all([load(o.downloaders, download, { raw: true }), load(o.clients - o.downloaders, ranking)]),
    );
    const popularityCpu = await end();
    await sleep(1100); // the rankings are cached for 1 s
    let counted = 0;
    for (let page = 0, list = [null]; list.length; page++) {
      list = (await (await fetch(new URL(`/api/v1/popularity/avatar/0/100/${page}`, host.url))).json()).result
        .Popularity;
      list.forEach((entry) => (counted += entry.Hourly.Usages));
      if (list.length < 100) break;
    }
    const failures = { count: 0, samples: [] };
    for (const r of [search, downloads, readings]) {
      failures.count += r.failures;
      failures.samples.push(...r.failureSamples);
    }
    if (counted < downloads.count) {
      failures.count++;
      failures.samples.push(`${downloads.count} downloads, only ${counted} uses counted`);
    }
    if (!builds.every((b) => b.fileId)) throw new BenchError('an upload did not finish');
    return {
      title: `${o.users} users, ${o.avatars} avatars, ${o.worlds} worlds, ${o.clients} clients, ${o.seconds} s per phase`,
      rows: [
        { name: 'search + tag throughput', value: search.perSecond, unit: 'req/s', target: ['>=', 2000] },
        { name: 'search + tag p99', value: search.p99, unit: 'ms', target: ['<', 50] },
        { name: 'search + tag p50', value: search.p50, unit: 'ms' },
        {
          name: 'search: host CPU / main per request',
          shown: `${Math.round((1e6 * searchCpu.serverSeconds) / search.count)} / ${Math.round((1e6 * searchCpu.mainSeconds) / search.count)} us`,
        },
        { name: 'popularity reads p99', value: readings.p99, unit: 'ms', target: ['<', 20] },
        {
          name: 'popularity reads p50, rate',
          shown: `${readings.p50.toFixed(2)} ms, ${Math.round(readings.perSecond)} req/s`,
        },
        {
          name: 'downloads during it: rate, p99',
          shown: `${Math.round(downloads.perSecond)} /s, ${downloads.p99.toFixed(1)} ms`,
        },
        { name: 'downloads answered / uses counted', shown: `${downloads.count} / ${counted}` },
        { name: 'popularity: host CPU', value: popularityCpu.serverCpuPercent, unit: '%' },
      ],
      notes: ['Downloads in flight when the phase ends may be counted as uses without an answer here.'],
      failures,
    };
  },
};
