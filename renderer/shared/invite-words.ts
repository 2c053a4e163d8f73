import { hostBridge } from './host-bridge.js';

/** Where this UI runs, in the words of a sentence: the desktop app's window or a web browser. */
export function placeOfThisUi(): 'window' | 'browser' {
  return hostBridge() ? 'window' : 'browser';
}

/**
 * What the sender of an invite request can do once it is answered. The answer is an invite sent from the game
 * (or the friend marked it answered after answering some other way); invites reach only the Hypernex game, never
 * this UI, and one sent while the sender's game was closed is not kept.
 */
export function answeredInviteText(name: string, place: 'window' | 'browser' = placeOfThisUi()): string {
  return `${name} answered your invite request. Invites arrive in the Hypernex game, not in this ${place}: if your game was not open, open it and ask ${name} again.`;
}
