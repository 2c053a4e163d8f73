import { hostBridge } from './host-bridge.js';

/**
 * Alerts for invite and friend requests outside the page (issue 18): a native browser notification, once the person
 * allowed them from a button (browsers only ask from a click, and asking on arrival would be nagging), and an
 * optional sound. Both are settings of this browser, kept in localStorage. In the desktop window the host process
 * has main notify the signed-in user instead, window open or not (main/desktop-notifications.ts).
 */

export const SOUND_KEY = 'hnx.alerts.sound';
/** Several tabs of one browser make one sound per request: the first one to claim its tag plays it. */
const SOUND_CLAIM_KEY = 'hnx.alerts.soundClaim';

export type NotificationState = 'unsupported' | 'desktop' | 'default' | 'granted' | 'denied';

export function notificationState(): NotificationState {
  if (hostBridge()) return 'desktop';
  if (typeof Notification === 'undefined') return 'unsupported';
  return Notification.permission;
}

/** Asks the browser for permission; call it only from a click (browsers ignore or penalise other calls). */
export async function askNotificationPermission(): Promise<NotificationState> {
  if (typeof Notification === 'undefined' || hostBridge()) return notificationState();
  try {
    await Notification.requestPermission();
  } catch {
    // Older browsers take a callback instead; the state below says what happened either way.
  }
  return notificationState();
}

export function soundEnabled(): boolean {
  try {
    return localStorage.getItem(SOUND_KEY) === 'on';
  } catch {
    return false;
  }
}

export function setSoundEnabled(on: boolean): void {
  try {
    localStorage.setItem(SOUND_KEY, on ? 'on' : 'off');
  } catch {
    // Without storage the choice lasts until the page closes.
  }
}

let audio: AudioContext | null = null;

/** Two short soft tones, made on the spot: no sound file to ship or load. */
export function playAlertSound(): void {
  try {
    audio ??= new AudioContext();
    if (audio.state === 'suspended') void audio.resume().catch(() => undefined);
    const start = audio.currentTime + 0.01;
    for (const [i, frequency] of [880, 1320].entries()) {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      const at = start + i * 0.14;
      osc.frequency.value = frequency;
      gain.gain.setValueAtTime(0.0001, at);
      gain.gain.exponentialRampToValueAtTime(0.12, at + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, at + 0.13);
      osc.connect(gain).connect(audio.destination);
      osc.start(at);
      osc.stop(at + 0.14);
    }
  } catch {
    // No audio output (or a browser without Web Audio): the toast is there anyway.
  }
}

function claimSound(tag: string): boolean {
  try {
    const raw = localStorage.getItem(SOUND_CLAIM_KEY);
    const [claimed, at] = (raw ?? '').split('|');
    if (claimed === tag && Date.now() - Number(at) < 10_000) return false;
    localStorage.setItem(SOUND_CLAIM_KEY, `${tag}|${Date.now()}`);
  } catch {
    // No storage: every tab plays it.
  }
  return true;
}

/**
 * Tells the person about something that arrived: a native notification when allowed (the tag makes several open
 * tabs show one per request) and the sound when it is on.
 */
export function alertPerson(title: string, body: string, tag: string): void {
  if (soundEnabled() && claimSound(tag)) playAlertSound();
  if (notificationState() !== 'granted') return;
  try {
    new Notification(title, { body, tag });
  } catch {
    // Some browsers allow notifications only from a service worker; the toast is there anyway.
  }
}
