import { describe, expect, it } from 'vitest';
import { formatBytes } from '../../renderer/shared/bytes.js';
import { updateOptionLabel } from '../../renderer/features/uploads/meta-form.js';
import { rankLabel } from '../../renderer/shared/ranks.js';
import { BuildPlatform, Rank } from '../../server/protocol/enums.js';

describe('one size format for every screen', () => {
  it('counts 2,000,000 bytes as 2.0 MB, in decimal units named as such', () => {
    expect(formatBytes(2_000_000)).toBe('2.0 MB');
    expect(formatBytes(1_000)).toBe('1.0 kB');
    expect(formatBytes(1_048_576)).toBe('1.0 MB');
    expect(formatBytes(2_500_000_000)).toBe('2.5 GB');
  });

  it('never shows 1000 of a unit or 100.0', () => {
    expect(formatBytes(999_999)).toBe('1.0 MB');
    expect(formatBytes(999_400)).toBe('999 kB');
    expect(formatBytes(99_960)).toBe('100 kB');
  });

  it('says nothing sensible for nonsense', () => {
    expect(formatBytes(-1)).toBe('–');
    expect(formatBytes(Number.NaN)).toBe('–');
  });
});

describe('words for protocol values', () => {
  it('names rank 1 for what it is, not the wire name "Incompleter"', () => {
    expect(rankLabel(Rank.Incompleter)).toBe('Email not confirmed');
    expect(rankLabel(Rank.Registered)).toBe('Registered');
    expect(rankLabel(Rank.Owner)).toBe('Owner');
    expect(rankLabel(9)).toBe('Rank 9');
  });

  it('names the chosen platform in an "Upload as" choice', () => {
    const pilot = { Name: 'Pilot', Builds: [{ FileId: 'file_w', BuildPlatform: BuildPlatform.Windows }] };
    expect(updateOptionLabel(pilot, BuildPlatform.Android)).toBe(
      'Update “Pilot”: add an Android build (has Windows)',
    );
    expect(updateOptionLabel(pilot, BuildPlatform.Windows)).toBe('Update “Pilot”: replace its Windows build');
    expect(updateOptionLabel({ Name: '', Builds: [] }, BuildPlatform.Windows)).toBe(
      'Update “Untitled”: add a Windows build (no builds yet)',
    );
  });
});
