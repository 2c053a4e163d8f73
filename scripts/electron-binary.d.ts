// Types for the plain-JS helper, so the TypeScript tests can import it.
export type ElectronBinary = { found: true; path: string } | { found: false; reason: string };

export function findElectronBinary(electronDir: string, env?: NodeJS.ProcessEnv): ElectronBinary;
