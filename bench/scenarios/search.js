import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startHost, withCpu } from '../harness/host.js';
import { httpLoad, post } from '../harness/http.js';
import { seed } from '../harness/seed.js';
import { failuresOf, several } from '../harness/stats.js';

const words = (text) => text.split(' ');
const WORDS = words(
  'neon cyber dark tiny cozy retro pastel shadow crystal frost ember storm golden silver lunar cosmic haunted ' +
    'fox wolf angel demon knight ninja kitty bunny dragon robot ghost witch pirate samurai raven tiger panda ' +
    'forest castle tower city beach club cafe arena dungeon garden island lake station temple lounge rooftop',
);
const SYLLABLES = words(
  'ka ri mo to shi na lu ve xa zen dra gon fi el ar thor mi ra ko sa ne on ly ix ae bel',
);
const TAGS = words(
  'anime cute furry robot scifi fantasy horror chill music dance social game pvp quest art vr',
);
/** Shares of the search mix: user 20%, avatar 30%, world 20%, avatar tags 20%, world tags 10%. */
const MIX = words('user user avatar avatar avatar world world avatarTag avatarTag worldTag');
const WINDOWS = words('Hourly Daily Weekly Monthly Yearly');
const PAGES = [10, 25, 50, 100];
const random = (n) => Math.floor(Math.random() * n);
const pick = (list) => list[random(list.length)];
const cap = (w) => w[0].toUpperCase() + w.slice(1);
const pseudo = () => cap(pick(SYLLABLES) + pick(SYLLABLES) + (Math.random() < 0.5 ? pick(SYLLABLES) : ''));
const assetName = () =>
  Math.random() < 0.5 ? `${cap(pick(WORDS))} ${cap(pick(WORDS))}` : `${pseudo()} the ${cap(pick(WORDS))}`;
/** Skewed: a few tags are very common, most rare. */
const tags = () => [
  ...new Set([0, 1, 2].slice(0, 1 + random(3)).map(() => TAGS[Math.floor(TAGS.length * Math.random() ** 2)])),
];

/** Searches: 1-3 letters of a word or a whole word, on random pages; every listed id known, public, matching. */
function searches(names) {
  return () => {
    const kind = pick(MIX);
    const [of, tagged] = [kind.replace('Tag', ''), kind.endsWith('Tag')];
    const per = pick(PAGES);
    const word = pick(WORDS.concat(SYLLABLES));
    const text = tagged ? pick(TAGS) : Math.random() < 0.5 ? word.slice(0, 1 + random(3)) : word;
    const matches = (id) => {
      const known = names[of].get(id);
      if (!known || known.ownerOnly) return `${of} ${id} unknown or OwnerOnly`;
      return (tagged ? known.tags : known.name).includes(text) ? null : `${id} does not match ${text}`;
    };
    const check = (a) => {
      const list = a.result?.Candidates;
      return !Array.isArray(list) || list.length > per
        ? 'no Candidates page'
        : (list.map(matches).find(Boolean) ?? null);
    };
    const page = `${encodeURIComponent(text)}/${per}/${Math.floor(5 * Math.random() ** 2)}`;
    return { path: `/api/v1/${tagged ? 'tag' : 'search'}/${of}/${page}`, check };
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
      const names = { user: new Map(), avatar: new Map(), world: new Map() };
      const users = Array.from({ length: o.users }, (_, i) => api.newUser({ username: `${pseudo()}${i}` }));
      users.forEach((u) => names.user.set(u.id, { name: u.username.toLowerCase() }));
      for (const [kind, count] of Object.entries({ avatar: o.avatars - o.popular, world: o.worlds })) {
        for (let i = 0; i < count; i++) {
          const owner = pick(users);
          const [Id, Name, Tags] = [api.ids.id(kind), assetName(), tags()];
          const Publicity = Math.random() < 0.1 ? 1 : 0;
          const world = kind === 'world';
          const build = { FileId: api.ids.id('file'), BuildPlatform: 0, ...(world && { ServerScripts: [] }) };
          const images = world ? { ThumbnailURL: '', IconURLs: [] } : { ImageURL: '' };
          const record = { Id, OwnerId: owner.id, Publicity, Name, Description: '', Tags, ...images };
          const times = { Builds: [build], DateCreated: api.now, DateUpdated: api.now };
          await api.put(`${kind}s`, { ...record, ...times });
          owner.record[kind === 'avatar' ? 'Avatars' : 'Worlds'].push(Id);
          names[kind].set(Id, { name: Name.toLowerCase(), tags: Tags, ownerOnly: Publicity === 1 });
        }
      }
      for (const user of users) await api.put('users', user.record);
      return { names, uploaders: users.slice(0, 100) };
    }),

  async load(ctx, { names, uploaders }) {
    const o = ctx.options;
    const host = await startHost(ctx);
    ctx.progress(`uploading ${o.popular} public avatars with builds ...`);
    const builds = [];
    const upload = async () => {
      const [user, build] = [pick(uploaders), { size: 8192 }];
      builds.push(build);
      const meta = { Publicity: 0, Name: assetName(), Description: '', Tags: tags(), ImageURL: '' };
      const file = { name: 'bench.hna', data: randomBytes(build.size).toString('base64') };
      const as = { userid: user.id, tokenContent: user.token };
      const a = await post(host.url, 'upload', { ...as, file, avatarMeta: { ...meta, BuildPlatform: 0 } });
      Object.assign(build, { userId: user.id, fileId: a.result.UploadData.FileId, id: a.result.AvatarId });
      names.avatar.set(build.id, { name: meta.Name.toLowerCase(), tags: meta.Tags });
    };
    const uploader = async () => {
      while (builds.length < o.popular) await upload();
    };
    await Promise.all(Array.from({ length: 8 }, uploader));
    const popular = new Set(builds.map((b) => b.id));
    const load = (connections, next, extra) =>
      httpLoad(host.url, { connections, seconds: o.seconds, next, ...extra });
    if (o.warmup > 0) await load(o.clients, searches(names), { seconds: o.warmup });
    ctx.progress(`searches, ${o.clients} clients ...`);
    const searching = () => ctx.guard(load(o.clients, searches(names), { checkEvery: o['check-every'] }));
    const [search, searchCpu] = await withCpu(host.pid, searching);
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
      const [type, per] = [random(WINDOWS.length), pick(PAGES)];
      const check = (a) => {
        const list = a.result?.Popularity ?? [];
        const uses = list.map((entry) => entry[WINDOWS[type]].Usages);
        if (list.some((entry) => !popular.has(entry.Id))) return 'an avatar never downloaded in the ranking';
        return list.length <= per && uses.every((n, i) => n > 0 && (i === 0 || n <= uses[i - 1]))
          ? null
          : 'out of order';
      };
      return { path: `/api/v1/popularity/avatar/${type}/${per}/${random(3)}`, check };
    };
    const readers = o.clients - o.downloaders;
    const both = () => Promise.all([load(o.downloaders, download, { raw: true }), load(readers, ranking)]);
    const [[downloads, readings], popularityCpu] = await withCpu(host.pid, () => ctx.guard(both()));
    await sleep(1100); // the rankings are cached for 1 s
    let counted = 0;
    for (let page = 0, more = true; more; page++) {
      const list = (await (await fetch(new URL(`/api/v1/popularity/avatar/0/100/${page}`, host.url))).json())
        .result.Popularity;
      list.forEach((entry) => (counted += entry.Hourly.Usages));
      more = list.length === 100;
    }
    const failures = failuresOf([search, downloads, readings]);
    if (counted < downloads.count)
      failures.samples.push(`${downloads.count} downloads, ${counted} uses counted`);
    if (counted < downloads.count) failures.count++;
    const perRequest = [searchCpu.serverSeconds, searchCpu.mainSeconds].map((s) => (1e6 * s) / search.count);
    const reads = `${readings.p50.toFixed(2)} ms, ${Math.round(readings.perSecond)} req/s`;
    const downloaded = `${Math.round(downloads.perSecond)} /s, ${downloads.p99.toFixed(1)} ms`;
    return {
      title: `${o.users} users, ${o.avatars} avatars, ${o.worlds} worlds, ${o.clients} clients, ${o.seconds} s per phase`,
      rows: [
        ['search + tag throughput', search.perSecond, 'req/s', ['>=', 2000]],
        ['search + tag p99', search.p99, 'ms', ['<', 50]],
        ['search + tag p50', search.p50, 'ms'],
        ['search: host CPU / main per request', several(perRequest, 'us')],
        ['popularity reads p99', readings.p99, 'ms', ['<', 20]],
        ['popularity reads p50, rate', reads],
        ['downloads during it: rate, p99', downloaded],
        ['downloads answered / uses counted', `${downloads.count} / ${counted}`],
        ['popularity: host CPU', popularityCpu.serverCpuPercent, '%'],
      ],
      notes: ['Downloads in flight when the phase ends may be counted as uses without an answer here.'],
      failures,
    };
  },
};
