import { describe, expect, it } from 'vitest';
import type { AvatarMetaDto, WorldMetaDto } from '../../server/protocol/uploads.js';
import {
  bytesIn,
  chunkBytes,
  chunkRange,
  missingChunks,
  planChunks,
} from '../../renderer/features/uploads/chunks.js';
import { failureText, kindOfName, plainMessage } from '../../renderer/features/uploads/job-text.js';
import {
  buildEffect,
  diffMeta,
  emptyMeta,
  mapServerFields,
  metaField,
  metaProblems,
  parseTags,
  valuesFromWorld,
  type MetaValues,
} from '../../renderer/features/uploads/meta-form.js';
import { formatBytes } from '../../renderer/shared/bytes.js';
import {
  formatDuration,
  formatSpeed,
  percentOf,
  SpeedMeter,
} from '../../renderer/features/uploads/progress.js';
import {
  createResumeStore,
  RESUME_KEY,
  type ResumeRecord,
} from '../../renderer/features/uploads/resume-store.js';
import {
  DEFAULT_UPLOAD_SETTINGS,
  readUploadSettings,
} from '../../renderer/features/uploads/upload-settings.js';

function memoryStorage(initial: Record<string, string> = {}) {
  const data = new Map(Object.entries(initial));
  return {
    getItem: (key: string) => data.get(key) ?? null,
    setItem: (key: string, value: string) => void data.set(key, value),
    raw: data,
  };
}

const avatar: AvatarMetaDto = {
  Id: 'avatar_1',
  OwnerId: 'user_1',
  Publicity: 0,
  Name: 'Robot',
  Description: 'Old',
  Tags: ['robot', 'metal'],
  ImageURL: 'https://i.imgur.com/a.png',
  Builds: [{ FileId: 'file_win', BuildPlatform: 0 }],
  DateCreated: 1,
  DateUpdated: 1,
};

const world: WorldMetaDto = {
  Id: 'world_1',
  OwnerId: 'user_1',
  Publicity: 1,
  Name: 'Island',
  Description: '',
  Tags: [],
  ThumbnailURL: '',
  IconURLs: ['https://i.imgur.com/1.png'],
  Builds: [
    { FileId: 'file_w', BuildPlatform: 0, ServerScripts: ['http://h/api/v1/file/u/file_s1'] },
    { FileId: 'file_a', BuildPlatform: 1, ServerScripts: [] },
  ],
  DateCreated: 1,
  DateUpdated: 1,
};

function values(changes: Partial<MetaValues>): MetaValues {
  return { ...emptyMeta(), name: 'Robot', ...changes };
}

describe('upload progress figures', () => {
  it('formats sizes in decimal units as the host phrases its limit', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(1500)).toBe('1.5 kB');
    expect(formatBytes(3_000_000)).toBe('3.0 MB');
    expect(formatBytes(153_400_000)).toBe('153 MB');
    expect(formatBytes(1_000_000_000)).toBe('1.0 GB');
    expect(formatSpeed(2_500_000)).toBe('2.5 MB/s');
  });

  it('says time left the short way people read it', () => {
    expect(formatDuration(0.2)).toBe('1 s');
    expect(formatDuration(42.1)).toBe('43 s');
    expect(formatDuration(125)).toBe('2 min 5 s');
    expect(formatDuration(14 * 60 + 3)).toBe('14 min');
    expect(formatDuration(3600 + 20 * 60)).toBe('1 h 20 min');
    expect(formatDuration(Number.POSITIVE_INFINITY)).toBe('–');
  });

  it('shows 100% only when every byte is there', () => {
    expect(percentOf(999_999, 1_000_000)).toBe(99);
    expect(percentOf(1_000_000, 1_000_000)).toBe(100);
    expect(percentOf(0, 0)).toBe(0);
  });

  it('measures speed over a sliding window and estimates the time left', () => {
    const meter = new SpeedMeter(5000);
    meter.add(0, 0);
    expect(meter.speed()).toBeNull();
    meter.add(1000, 1_000_000);
    meter.add(2000, 2_000_000);
    expect(meter.speed()).toBe(1_000_000);
    expect(meter.secondsLeft(10_000_000)).toBe(8);
    // Old samples fall out of the window: a slowdown shows within seconds.
    for (let t = 3000; t <= 9000; t += 1000) meter.add(t, 2_000_000 + (t - 2000) * 100);
    expect(meter.speed()).toBeCloseTo(100_000, -3);
  });

  it('restarts the estimate when a part is sent again from its start', () => {
    const meter = new SpeedMeter();
    meter.add(0, 500);
    meter.add(1000, 1500);
    meter.add(1100, 200);
    expect(meter.speed()).toBeNull();
  });
});

describe('chunk planning', () => {
  it('cuts a file into full parts and a shorter last one', () => {
    const plan = planChunks(20 * 1024 + 5, 8 * 1024);
    expect(plan.amount).toBe(3);
    expect(chunkRange(plan, 2)).toEqual({ start: 16 * 1024, end: 20 * 1024 + 5 });
    expect(chunkBytes(plan, 0)).toBe(8 * 1024);
    expect(chunkBytes(plan, 2)).toBe(4 * 1024 + 5);
  });

  it('sends an empty file as one empty part', () => {
    const plan = planChunks(0, 1024);
    expect(plan.amount).toBe(1);
    expect(chunkBytes(plan, 0)).toBe(0);
  });

  it('lists only the parts the host lacks and counts what it holds', () => {
    const plan = planChunks(6 * 100, 100);
    expect(missingChunks(plan, [0, 1, 4, 9])).toEqual([2, 3, 5]);
    expect(bytesIn(plan, [0, 1, 1, 7])).toBe(200);
  });
});

describe('chunk settings', () => {
  it('uses 8 MiB parts above 16 MiB unless the browser is told otherwise', () => {
    expect(readUploadSettings(null)).toEqual(DEFAULT_UPLOAD_SETTINGS);
    expect(
      readUploadSettings(memoryStorage({ 'hnx.chunkThreshold': '65536', 'hnx.chunkSize': '65536' })),
    ).toEqual({
      chunkThreshold: 65536,
      chunkSize: 65536,
    });
  });

  it('ignores nonsense and keeps parts from getting absurdly small', () => {
    expect(
      readUploadSettings(memoryStorage({ 'hnx.chunkThreshold': '-5', 'hnx.chunkSize': 'lots' })),
    ).toEqual(DEFAULT_UPLOAD_SETTINGS);
    expect(readUploadSettings(memoryStorage({ 'hnx.chunkSize': '10' })).chunkSize).toBe(16 * 1024);
  });
});

describe('the resume store', () => {
  const record: ResumeRecord = {
    userId: 'user_1',
    chunkId: 'a'.repeat(50),
    name: 'island.hnw',
    size: 1000,
    lastModified: 42,
    chunkSize: 100,
    amountOfChunks: 10,
    kind: 'world',
    meta: { field: 'worldMeta', json: '{}' },
    title: 'New world',
    values: null,
    savedAt: 1,
  };

  it('finds an upload again only for the same user and the very same file', () => {
    const store = createResumeStore(memoryStorage());
    store.save(record);
    expect(store.find('user_1', { name: 'island.hnw', size: 1000, lastModified: 42 })?.chunkId).toBe(
      record.chunkId,
    );
    expect(store.find('user_1', { name: 'island.hnw', size: 1000, lastModified: 43 })).toBeUndefined();
    expect(store.find('user_1', { name: 'island.hnw', size: 999, lastModified: 42 })).toBeUndefined();
    expect(store.find('user_2', { name: 'island.hnw', size: 1000, lastModified: 42 })).toBeUndefined();
  });

  it('keeps one record per file and forgets by chunk id', () => {
    const storage = memoryStorage();
    const store = createResumeStore(storage);
    store.save(record);
    store.save({ ...record, chunkId: 'b'.repeat(50) });
    expect(store.list('user_1').map((r) => r.chunkId)).toEqual(['b'.repeat(50)]);
    store.forget('b'.repeat(50));
    expect(store.list('user_1')).toEqual([]);
    expect(storage.raw.get(RESUME_KEY)).toBe('[]');
  });

  it('survives broken or missing storage', () => {
    expect(createResumeStore(memoryStorage({ [RESUME_KEY]: '{not json' })).list('user_1')).toEqual([]);
    expect(createResumeStore(memoryStorage({ [RESUME_KEY]: '[{"userId":1}]' })).list('user_1')).toEqual([]);
    const none = createResumeStore(null);
    none.save(record);
    expect(none.list('user_1')).toEqual([]);
    const throwing = createResumeStore({
      getItem: () => {
        throw new Error('blocked');
      },
      setItem: () => {
        throw new Error('full');
      },
    });
    expect(() => throwing.save(record)).not.toThrow();
  });
});

describe('the details form against the shared rules', () => {
  it('builds the meta JSON the host expects, with tags trimmed and deduplicated', () => {
    expect(parseTags(' robot, Metal ,, metal, shiny ')).toEqual(['robot', 'Metal', 'shiny']);
    const sent = metaField(
      'avatar',
      values({ tags: 'a, b', targetId: 'avatar_1', platform: 1, image: ' https://x/y ' }),
    );
    expect(sent.field).toBe('avatarMeta');
    expect(JSON.parse(sent.json)).toEqual({
      Id: 'avatar_1',
      Publicity: 0,
      Name: 'Robot',
      Description: '',
      Tags: ['a', 'b'],
      BuildPlatform: 1,
      ImageURL: 'https://x/y',
    });
    expect(JSON.parse(metaField('avatar', values({})).json)).not.toHaveProperty('Id');
  });

  it('names each broken rule on its field in words', () => {
    const problems = metaProblems(
      'world',
      values({
        name: 'N'.repeat(51),
        description: 'd'.repeat(1001),
        tags: Array.from({ length: 51 }, (_, i) => `t${i}`).join(','),
        image: 'ftp://example.com/a.png',
        icons: ['', 'not a url', ...Array.from({ length: 9 }, () => 'https://i.imgur.com/x.png')],
      }),
    );
    expect(problems).toMatchObject({
      name: 'Name must be at most 50 characters',
      description: 'Description must be at most 1000 characters',
      tags: 'Tags: at most 50 tags',
      image: 'Thumbnail URL must be a web address starting with https:// or http://',
      icons: 'Icons: at most 10 icons',
      'icons.0': 'Icon 1: enter its URL or remove the row',
      'icons.1': 'Icon 2 must be a web address starting with https:// or http://',
    });
  });

  it('catches an over-long tag and a missing name, and passes good details', () => {
    expect(metaProblems('avatar', values({ name: ' ', tags: `ok, ${'x'.repeat(65)}` }))).toEqual({
      name: 'Give the avatar a name',
      tags: 'Tag 2 must be at most 64 characters',
    });
    expect(metaProblems('avatar', values({ image: 'https://i.imgur.com/a.png' }))).toEqual({});
  });

  it("applies the host's published image domains and local hosts before sending, in the host's words", () => {
    const rules = { allowedImageDomains: ['i.imgur.com'], localHosts: ['192.168.1.20:5180'] };
    const world = values({
      image: 'https://images.example.com/a.png',
      icons: [
        'https://i.imgur.com/ok.png',
        'http://elsewhere.test/x.png',
        'http://192.168.1.20:5180/file/u/f',
      ],
      scripts: ['http://192.168.1.20:5180/file/u/s1', 'https://i.imgur.com/s2.lua'],
    });
    expect(metaProblems('world', world, rules)).toEqual({
      image: 'Thumbnail URL must be empty, on this host or on an allowed image domain (i.imgur.com)',
      'icons.1': 'Icon 2 must be on this host or on an allowed image domain (i.imgur.com)',
      scripts: 'Server script 2 must be a file URL on this host',
    });
    // Without the rules only the shape is checked; the host then answers for the domain.
    expect(metaProblems('world', world)).toEqual({});
    expect(
      metaProblems('avatar', values({ image: 'https://i.imgur.com/a.png' }), {
        ...rules,
        allowedImageDomains: [],
      }),
    ).toEqual({ image: 'Image URL must be empty, on this host or on an allowed image domain (none)' });
  });

  it("puts the host's field errors on the fields and keeps the rest as sentences", () => {
    expect(
      mapServerFields('world', {
        'worldMeta.ThumbnailURL': 'must be empty, on this host or on an allowed image domain (i.imgur.com)',
        'worldMeta.IconURLs.3': 'must be on this host or on an allowed image domain (i.imgur.com)',
        'worldMeta.ServerScripts.0': 'must be a file URL on this host',
        'worldMeta.Id': 'belongs to someone else',
        chunkId: 'unknown or expired',
      }),
    ).toEqual({
      fields: {
        image: 'Thumbnail URL must be empty, on this host or on an allowed image domain (i.imgur.com)',
        'icons.3': 'Icon 4 must be on this host or on an allowed image domain (i.imgur.com)',
        scripts: 'Server script 1 must be a file URL on this host',
        target: 'The world to update belongs to someone else',
      },
      rest: ['chunkId unknown or expired'],
    });
    expect(mapServerFields('avatar', { avatarMeta: 'only goes with a .hna file' }).fields).toEqual({
      file: 'Details for an avatar only goes with a .hna file',
    });
  });
});

describe('what an overwrite changes', () => {
  it('lists only the details that differ, before and after', () => {
    const changes = diffMeta(
      'avatar',
      avatar,
      values({
        targetId: 'avatar_1',
        description: 'Old',
        tags: 'robot, shiny',
        publicity: 1,
        image: avatar.ImageURL,
      }),
    );
    expect(changes).toEqual([
      {
        label: 'Tags',
        before: 'robot, metal',
        after: 'robot, shiny',
        added: ['shiny'],
        removed: ['metal'],
      },
      { label: 'Who can use it', before: 'Anyone', after: 'Only me' },
    ]);
  });

  it("compares a world's icons and the chosen platform's server scripts", () => {
    const next = { ...valuesFromWorld(world, 0), icons: [], scripts: [] };
    expect(diffMeta('world', world, next).map((c) => [c.label, c.before, c.after])).toEqual([
      ['Icons', '1 icon', 'none'],
      ['Server scripts (Windows build)', '1 script', 'none'],
    ]);
    expect(diffMeta('world', world, valuesFromWorld(world, 1))).toEqual([]);
  });

  it('says whether the build of that platform is replaced or added', () => {
    expect(buildEffect(avatar, 0)).toEqual({
      kind: 'replace',
      platform: 'Windows',
      fileId: 'file_win',
      others: [],
    });
    expect(buildEffect(avatar, 1)).toEqual({ kind: 'add', platform: 'Android', others: ['Windows'] });
  });
});

describe('upload failures in words', () => {
  it("drops the real server's lead-in and names refused fields", () => {
    expect(plainMessage('Failed to upload file! "zip" files are not allowed.')).toBe(
      '"zip" files are not allowed.',
    );
    expect(
      failureText(
        'avatar',
        {
          code: 'INVALID_META',
          message: 'Failed to upload Avatar! Check: avatarMeta.ImageURL.',
          fields: {
            'avatarMeta.ImageURL': 'must be empty, on this host or on an allowed image domain (i.imgur.com)',
          },
        },
        false,
      ),
    ).toBe('Image URL must be empty, on this host or on an allowed image domain (i.imgur.com).');
    expect(failureText('media', { code: 'NETWORK_ERROR', message: 'x', fields: {} }, true)).toMatch(
      /Retry continues from the last part/,
    );
  });

  it('knows each allowed extension, in any case', () => {
    expect(kindOfName('A.HNA')).toBe('avatar');
    expect(kindOfName('w.hnw')).toBe('world');
    expect(kindOfName('p.JPEG')).toBe('media');
    expect(kindOfName('s.lua')).toBe('script');
    expect(kindOfName('notes.txt')).toBeNull();
  });
});
