import { describe, expect, it } from 'vitest';
import { parseAddressLink, signupLink } from '../../renderer/shared/address-links.js';
import { answeredInviteText } from '../../renderer/shared/invite-words.js';

describe('links that carry a secret in the address', () => {
  it('reads a setup link and a sign-up link, and nothing else', () => {
    expect(parseAddressLink('#setup=abc')).toEqual({ kind: 'setup', secret: 'abc' });
    expect(parseAddressLink('#signup=a%2Bb%20')).toEqual({ kind: 'signup', code: 'a+b' });
    expect(parseAddressLink('#signup=%E0%A4%A')).toEqual({ kind: 'signup', code: '%E0%A4%A' });
    expect(parseAddressLink('#/friends')).toBeNull();
    expect(parseAddressLink('#signup=')).toBeNull();
    expect(parseAddressLink('')).toBeNull();
  });

  it('makes a sign-up link that reads back to its code', () => {
    const link = signupLink('http://192.168.1.20:5180/', 'Ab_9-x/y');
    expect(link).toBe('http://192.168.1.20:5180/#signup=Ab_9-x%2Fy');
    expect(parseAddressLink(new URL(link).hash)).toEqual({ kind: 'signup', code: 'Ab_9-x/y' });
  });
});

describe('the answer to an invite request, for its sender', () => {
  it('says where invites arrive instead of promising one here', () => {
    const text = answeredInviteText('Bea', 'browser');
    expect(text).toContain('Invites arrive in the Hypernex game, not in this browser');
    expect(answeredInviteText('Bea', 'window')).toContain('not in this window');
    expect(text).not.toContain('look for their invite');
  });
});
