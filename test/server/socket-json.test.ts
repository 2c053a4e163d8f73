import { describe, expect, it } from 'vitest';
import {
  gotInviteRequestJson,
  jsonNumber,
  jsonString,
  sentInviteRequestJson,
  ServerMessage,
} from '../../server/protocol/socket.js';

/** Strings JSON has to escape, or that only look like they need it. */
const AWKWARD = [
  '',
  'plain_user',
  'quote " and backslash \\',
  'control \u0000\u0001\u001f\n\r\t',
  'html </script> & <!--',
  'line separators \u2028\u2029',
  'héllo ✓ 😀',
  'lone surrogates \ud800 \udfff',
];

describe('hot-path socket messages', () => {
  it('gotinviterequest is exactly what JSON.stringify writes, for any strings', () => {
    for (const text of AWKWARD) {
      const result = {
        fromUserId: `user_${text}`,
        requestId: `invreq_${text}`,
        fromUsername: text,
        sentAt: 1_763_000_000,
        expiresAt: 1_763_000_300,
      };
      const json = gotInviteRequestJson(result);
      expect(json).toBe(JSON.stringify({ message: ServerMessage.gotInviteRequest, result }));
      expect(JSON.parse(json)).toEqual({ message: 'gotinviterequest', result });
    }
  });

  it('sentinviterequest is exactly what JSON.stringify writes, for any strings', () => {
    for (const text of AWKWARD) {
      const result = { targetUserId: text, requestId: `invreq_${text}` };
      expect(sentInviteRequestJson(result.targetUserId, result.requestId)).toBe(
        JSON.stringify({ message: ServerMessage.sentInviteRequest, result }),
      );
    }
  });

  it('writes strings as JSON.stringify does, for every UTF-16 code unit', () => {
    for (const text of AWKWARD) expect(jsonString(text)).toBe(JSON.stringify(text));
    for (let unit = 0; unit <= 0xffff; unit++) {
      const text = `a${String.fromCharCode(unit)}b`;
      expect(jsonString(text)).toBe(JSON.stringify(text));
    }
  });

  it('writes numbers as JSON does', () => {
    for (const n of [0, -0, 1, -1, 1.5, 2 ** 53, 1e21, 1e-7, NaN, Infinity, -Infinity]) {
      expect(jsonNumber(n)).toBe(JSON.stringify(n));
    }
  });
});
