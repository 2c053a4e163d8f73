import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Starts a throwaway PostgreSQL and Redis for the run (and installs what is missing, as root): test/global-setup.ts
    globalSetup: ['./test/global-setup.ts'],
    env: { HYPERNEX_LOG_LEVEL: 'silent' },
  },
});
