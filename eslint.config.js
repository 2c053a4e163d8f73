import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';

const nodeBuiltins = [
  'node:*',
  'fs',
  'fs/*',
  'path',
  'os',
  'http',
  'https',
  'net',
  'crypto',
  'child_process',
  'stream',
  'url',
  'worker_threads',
];

export default tseslint.config(
  { ignores: ['dist/**', 'release/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Rules that read types, for the code that runs in Node (the host, the desktop shell): a promise nobody awaits
    // or catches loses its failure (an unhandled rejection ends the process), and a promise handed to a place that
    // expects a plain callback (an event listener, a setTimeout) is not awaited by it.
    files: ['server/**/*.ts', 'main/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    // CommonJS build hooks (electron-builder loads afterPack with require).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // server/ runs alone (CLI, tests): it never pulls in the desktop shell or the UI.
    files: ['server/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['electron', 'react', 'react-dom', 'react/*', 'react-dom/*'],
              message: 'server/ must not import electron or react',
            },
            {
              group: ['**/main/**', '**/renderer/**'],
              message: 'server/ must not import the shell or the UI',
            },
          ],
        },
      ],
    },
  },
  {
    // server/protocol is the wire contract the renderer shares: it stays free of Node.
    files: ['server/protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: nodeBuiltins,
              message: 'server/protocol is shared with the renderer: no Node built-ins',
            },
            {
              group: ['electron', 'react', 'koa', 'ws', 'lowdb', '../*'],
              message: 'server/protocol depends on zod only',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['renderer/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: nodeBuiltins, message: 'the renderer runs in a browser: no Node built-ins' },
            {
              group: ['electron'],
              message: 'the renderer reaches the shell only through window.hypernexHost',
            },
            {
              regex: '^(\\.\\./)+server/(?!protocol/)',
              message: 'the renderer may import only server/protocol from the server',
            },
            {
              regex: '^\\.\\./(?!\\.\\./)(?!shared/|server/protocol/)[^/]+/',
              message: 'features do not import each other; share through renderer/shared',
            },
          ],
        },
      ],
    },
  },
);
