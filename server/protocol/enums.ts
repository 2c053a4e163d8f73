/** Wire enums of Hypernex 1.4.x (reference section 4.5 and 5.2). Values are what travels on the wire. */
export const Rank = {
  Guest: 0,
  Incompleter: 1,
  Registered: 2,
  Verified: 3,
  Moderator: 4,
  Admin: 5,
  Owner: 6,
} as const;
export type Rank = (typeof Rank)[keyof typeof Rank];
export const RANK_NAMES: Record<Rank, string> = {
  0: 'Guest',
  1: 'Incompleter',
  2: 'Registered',
  3: 'Verified',
  4: 'Moderator',
  5: 'Admin',
  6: 'Owner',
};

export const Status = {
  Offline: 0,
  Online: 1,
  Absent: 2,
  Party: 3,
  DoNotDisturb: 4,
} as const;
export type Status = (typeof Status)[keyof typeof Status];
export const STATUS_NAMES: Record<Status, string> = {
  0: 'Offline',
  1: 'Online',
  2: 'Absent',
  3: 'Party',
  4: 'Do Not Disturb',
};

export const LoginResult = {
  Incorrect: 0,
  Missing2FA: 1,
  Banned: 2,
  Warned: 3,
  Correct: 4,
} as const;
export type LoginResult = (typeof LoginResult)[keyof typeof LoginResult];

export const UploadType = { Media: 0, Avatar: 1, World: 2, ServerScript: 3 } as const;
export type UploadType = (typeof UploadType)[keyof typeof UploadType];

export const BuildPlatform = { Windows: 0, Android: 1 } as const;
export type BuildPlatform = (typeof BuildPlatform)[keyof typeof BuildPlatform];

export const Publicity = { Anyone: 0, OwnerOnly: 1 } as const;
export type Publicity = (typeof Publicity)[keyof typeof Publicity];
