/**
 * Email addresses a LAN host accepts (issue 28). The host sends no email (SPEC section 2): an address is only a
 * contact the owner keeps and a second unique key, so it needs a sane shape, not a public domain. The owner of a
 * LAN host types `owner@lan` or `me@localhost`, and a domain with no dot is as good as any there.
 *
 * The shape is the HTML standard's "valid e-mail address" (what a browser's email field accepts, single-label
 * domains included), with the local part as an RFC 5322 dot-atom (no leading, trailing or doubled dot) and the
 * RFC 5321 lengths. ASCII only, as browsers' email fields; quoted local parts and address literals are refused.
 */

export const EMAIL_MAX = 254;
export const EMAIL_LOCAL_MAX = 64;
const LABEL_MAX = 63;

const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LOCAL = new RegExp(`^${ATOM}(?:\\.${ATOM})*$`);
/** Letters, digits and inner hyphens. */
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/;

/** Whether `email` is an address this host accepts. */
export function isAcceptedEmail(email: string): boolean {
  if (email.length > EMAIL_MAX) return false;
  const at = email.lastIndexOf('@');
  if (at <= 0) return false;
  const local = email.slice(0, at);
  const labels = email.slice(at + 1).split('.');
  if (local.length > EMAIL_LOCAL_MAX || !LOCAL.test(local)) return false;
  return labels.every((label) => label.length <= LABEL_MAX && LABEL.test(label));
}
