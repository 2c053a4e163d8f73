import { describe, expect, it } from 'vitest';
import type { AvatarMetaDto, WorldMetaDto } from '../../server/protocol/uploads.js';
import { fileUrl, shareableOrigin, type PageAddress } from '../../renderer/features/uploads/content-api.js';
import {
  detailsBody,
  detailsFailure,
  detailsPlatform,
  detailsProblems,
  detailsValues,
} from '../../renderer/features/uploads/details-form.js';
import { mapServerFields } from '../../renderer/features/uploads/meta-form.js';

function page(href: string): PageAddress {
  const { protocol, hostname, port, origin } = new URL(href);
  return { protocol, hostname, port, origin };
}

const avatar: AvatarMetaDto = {
  Id: 'avatar_1',
  OwnerId: 'user_1',
  Publicity: 0,
  Name: 'Robot',
  Description: 'Old',
  Tags: ['robot', 'metal'],
  ImageURL: 'https://i.imgur.com/a.png',
  Builds: [{ FileId: 'file_and', BuildPlatform: 1 }],
  DateCreated: 1,
  DateUpdated: 1,
};

const SCRIPT = 'http://192.168.1.20:5180/api/v1/file/user_1/file_00000000-0000-4000-8000-000000000001';

const world: WorldMetaDto = {
  Id: 'world_1',
  OwnerId: 'user_1',
  Publicity: 1,
  Name: 'Arena',
  Description: '',
  Tags: [],
  ThumbnailURL: '',
  IconURLs: ['https://i.imgur.com/i.png'],
  Builds: [
    { FileId: 'file_and', BuildPlatform: 1, ServerScripts: [] },
    { FileId: 'file_win', BuildPlatform: 0, ServerScripts: [SCRIPT] },
  ],
  DateCreated: 1,
  DateUpdated: 1,
};

const rules = {
  allowedImageDomains: ['i.imgur.com'],
  localHosts: ['127.0.0.1:5180', 'localhost:5180', '0.0.0.0:5180', '192.168.1.20:5180'],
};

describe('image URLs other machines can load', () => {
  const hosts = ['127.0.0.1:5180', 'localhost:5180', '0.0.0.0:5180', 'hx.example.com', '192.168.1.20:5180'];

  it('uses a LAN address of the host when the page is open on loopback', () => {
    expect(shareableOrigin(page('http://127.0.0.1:5180/#uploads'), hosts)).toBe('http://192.168.1.20:5180');
    expect(shareableOrigin(page('http://localhost:5180/'), hosts)).toBe('http://192.168.1.20:5180');
    expect(shareableOrigin(page('http://[::1]:5180/'), hosts)).toBe('http://192.168.1.20:5180');
  });

  it('keeps the address the page came from when it is not loopback', () => {
    expect(shareableOrigin(page('http://192.168.1.30:5180/'), hosts)).toBe('http://192.168.1.30:5180');
    expect(shareableOrigin(page('https://hx.example.com/'), hosts)).toBe('https://hx.example.com');
  });

  it('keeps loopback when the host has no LAN address on this port (bound to this machine only)', () => {
    const local = ['127.0.0.1:5180', 'localhost:5180', '127.0.0.1:5180'];
    expect(shareableOrigin(page('http://127.0.0.1:5180/'), local)).toBe('http://127.0.0.1:5180');
    expect(shareableOrigin(page('http://127.0.0.1:5180/'), [])).toBe('http://127.0.0.1:5180');
    // A wildcard bind address and a name on another port (a proxy's) are no address to store.
    expect(shareableOrigin(page('http://127.0.0.1:5180/'), ['[::]:5180', 'hx.example.com'])).toBe(
      'http://127.0.0.1:5180',
    );
  });

  it('puts file URLs under that origin', () => {
    expect(fileUrl('http://192.168.1.20:5180', 'user_1', 'file_x')).toBe(
      'http://192.168.1.20:5180/api/v1/file/user_1/file_x',
    );
  });
});

describe('edit details without a new build', () => {
  it("sends an avatar's details as a JSON string under the lower-case key, with no file", () => {
    const values = { ...detailsValues('avatar', avatar), name: ' Robot Mk II ', tags: 'robot, shiny, Robot' };
    const body = detailsBody('avatar', values);
    expect(Object.keys(body)).toEqual(['avatarmeta']);
    expect(JSON.parse((body as { avatarmeta: string }).avatarmeta)).toEqual({
      Id: 'avatar_1',
      Publicity: 0,
      Name: 'Robot Mk II',
      Description: 'Old',
      Tags: ['robot', 'shiny'],
      BuildPlatform: 1,
      ImageURL: 'https://i.imgur.com/a.png',
    });
  });

  it("names a build the world has and sends that build's server scripts back unchanged", () => {
    expect(detailsPlatform(world)).toBe(0);
    expect(detailsPlatform({ ...world, Builds: [] })).toBe(0);
    expect(detailsPlatform(avatar)).toBe(1);
    const values = { ...detailsValues('world', world), image: 'https://i.imgur.com/t.png' };
    const meta = JSON.parse((detailsBody('world', values) as { worldmeta: string }).worldmeta) as Record<
      string,
      unknown
    >;
    expect(meta).toMatchObject({
      Id: 'world_1',
      Publicity: 1,
      BuildPlatform: 0,
      ThumbnailURL: 'https://i.imgur.com/t.png',
      IconURLs: ['https://i.imgur.com/i.png'],
      ServerScripts: [SCRIPT],
    });
  });

  it("checks the shared rules and the host's image rules before sending, on the form's fields", () => {
    const values = {
      ...detailsValues('world', world),
      name: '',
      image: 'https://evil.example.com/x.png',
      icons: ['', 'http://127.0.0.1:5180/api/v1/file/user_1/file_x'],
    };
    const { fields, message } = detailsProblems('world', values, rules);
    expect(fields).toEqual({
      name: 'Give the world a name',
      image: 'Thumbnail URL must be empty, on this host or on an allowed image domain (i.imgur.com)',
      'icons.0': 'Icon 1: enter its URL or remove the row',
    });
    expect(message).toBeNull();
    expect(detailsProblems('world', detailsValues('world', world), rules)).toEqual({
      fields: {},
      message: null,
    });
  });

  it('says in the form message what no field of the form can fix (a stored script no longer on this host)', () => {
    const moved = {
      ...world,
      Builds: [{ FileId: 'file_win', BuildPlatform: 0, ServerScripts: ['http://10.0.0.9:5180/x'] }],
    };
    const { fields, message } = detailsProblems('world', detailsValues('world', moved), rules);
    expect(fields).toEqual({});
    expect(message).toBe('Server script 1 must be a file URL on this host.');
  });

  it("puts the host's refusals on the fields, whatever case the meta key has", () => {
    expect(
      detailsFailure('world', {
        'worldMeta.Name': 'must be at most 50 characters',
        'worldmeta.IconURLs.1': 'must be on this host or on an allowed image domain (none)',
        'worldMeta.Id': 'belongs to someone else',
      }),
    ).toEqual({
      fields: {
        name: 'Name must be at most 50 characters',
        'icons.1': 'Icon 2 must be on this host or on an allowed image domain (none)',
      },
      message: 'The world to update belongs to someone else.',
    });
    expect(mapServerFields('avatar', { avatarmeta: 'is not valid JSON' }).fields).toEqual({
      file: 'The details is not valid JSON',
    });
  });
});
