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

// What nothing under server/ imports (repeated in each layer's rule below: a later block's no-restricted-imports
// replaces an earlier one's for the same files).
const SERVER_OUTER = [
  {
    group: ['electron', 'react', 'react-dom', 'react/*', 'react-dom/*'],
    message: 'server/ must not import electron or react',
  },
  {
    group: ['**/main/**', '**/renderer/**'],
    message: 'server/ must not import the shell or the UI',
  },
];

/** One or more `../` at the start of an import: a module of another folder of server/. */
const UP = '(\\.\\./)+';

/** What server/http and server/socket may not import (one list: the routes' block below adds to it). */
const EDGE_LAYERS = [
  {
    regex: `^${UP}(host|cli[^/]*)\\.js$`,
    message: 'host.ts and the CLI put the layers together: take HostCore from host-core.ts',
  },
  {
    regex: `^${UP}store/`,
    allowTypeImports: true,
    message: 'routes and socket handlers change data through services: only types from server/store',
  },
];

/** What server/http and server/socket may not write (one list: the routes' block below adds to it). */
const EDGE_SYNTAX = [
  {
    selector: "MemberExpression[property.name='tx']",
    message: 'routes and socket handlers do not open store transactions: a service does',
  },
  {
    selector: "CallExpression[callee.property.name='repo']",
    message: 'routes and socket handlers do not write repositories: a service does',
  },
];

/** The modules of main/ that run in the host process (or in tests), never in Electron's main process. */
const HOST_PROCESS_FILES = ['main/host-child.ts', 'main/host-agent.ts', 'main/in-process-host.ts'];

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
    files: ['server/**/*.ts', 'main/**/*.ts', 'shared/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `void` does not handle a rejection either: every background promise ends with a .catch that logs.
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: false }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    // A function fits on one screen: a factory wires small named functions, it is not itself the feature (a long
    // closure hides every function inside it from an outline, a search and a reviewer). Issue 29.
    files: ['server/**/*.ts', 'main/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true }],
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
          patterns: SERVER_OUTER,
        },
      ],
    },
  },
  // The layers inside server/, each importing only those to its right: http and socket (the two edges, side by side:
  // routes may ask the hub who is connected) -> services -> store -> protocol, plus the leaf modules errors.ts and
  // config.ts. host.ts and the cli*.ts files put the layers together; nothing inside a layer imports them (the
  // layers take the services as a HostCore, a type from host-core.ts).
  {
    files: ['server/http/**/*.ts', 'server/socket/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: EDGE_LAYERS,
        },
      ],
      'no-restricted-syntax': ['error', ...EDGE_SYNTAX],
    },
  },
  {
    // A route reads and writes through the services: not even a repository's type (a route handed a repository
    // would read the store around the service's rules).
    // (The plain rule: it weighs type imports as any other, where the typed one above lets them all through.)
    files: ['server/http/routes/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...SERVER_OUTER,
            {
              regex: `^${UP}store/`,
              importNamePattern: 'Repo$',
              message: 'routes reach data only through services (e.g. accounts.findUser): no repositories',
            },
          ],
        },
      ],
      // HostCore still hands the users repository to the socket layer: a route reads users through accounts.
      'no-restricted-syntax': [
        'error',
        ...EDGE_SYNTAX,
        {
          selector: [
            "MemberExpression[object.name='core'][property.name='users']",
            "MemberExpression[object.property.name='core'][property.name='users']",
            "VariableDeclarator[init.name='core'] > ObjectPattern > Property[key.name='users']",
            "VariableDeclarator[init.property.name='core'] > ObjectPattern > Property[key.name='users']",
          ].join(', '),
          message: 'routes reach users only through services (accounts.findUser, findUsers): not core.users',
        },
      ],
    },
  },
  {
    files: ['server/socket/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...SERVER_OUTER,
            { regex: `^${UP}http/`, message: 'server/socket sits beside server/http: it does not import it' },
          ],
        },
      ],
    },
  },
  {
    files: ['server/services/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...SERVER_OUTER,
            {
              regex: `^${UP}(http|socket)/`,
              message: 'services sit below server/http and server/socket: reach sockets through context.ts',
            },
            {
              regex: `^${UP}(host|host-core|cli[^/]*)\\.js$`,
              message: 'services do not import the place that puts them together',
            },
            { group: ['ws', 'koa', '@koa/*'], message: 'services know neither HTTP nor sockets' },
          ],
        },
      ],
      // A socket frame is built in server/protocol/socket.ts (or by the hub from a message and a result): a
      // service hands the Notifier a message name and a result, or a frame a protocol builder made.
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Literal[value=/"message"\\s*:/], TemplateElement[value.raw=/"message"\\s*:/]',
          message: 'services do not write socket frames: use a builder in server/protocol/socket.ts',
        },
        {
          selector:
            "CallExpression[callee.object.name='JSON'][callee.property.name='stringify'] > ObjectExpression:has(> Property[key.name='message'])",
          message: 'services do not serialise socket frames: hand the Notifier the message and the result',
        },
      ],
    },
  },
  {
    files: ['server/store/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...SERVER_OUTER,
            {
              regex: `^${UP}(http|socket|services)/`,
              message:
                'server/store sits below the services: it imports only server/protocol, errors.ts and shared/',
            },
            {
              regex: `^${UP}(host|host-core|cli[^/]*|config)\\.js$`,
              message: 'server/store imports only server/protocol, errors.ts and shared/',
            },
          ],
        },
      ],
    },
  },
  {
    // The leaf modules every layer may use import only the wire contract (and shared/, which imports nothing of ours).
    files: ['server/errors.ts', 'server/config.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...SERVER_OUTER,
            {
              regex: '^\\./(?!protocol/)',
              message: 'errors.ts and config.ts are leaves: only server/protocol and shared/',
            },
          ],
        },
      ],
    },
  },
  {
    // shared/ holds the few Node helpers both the host and Electron's main process use (atomic writes, the data
    // folder check, default port and folder): main/ loads them without loading any of the server.
    files: ['shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!node:|\\./)',
              message:
                'shared/ imports only Node built-ins and its own modules (nothing of server/, main/, packages)',
            },
          ],
        },
      ],
    },
  },
  {
    // Electron's main process loads nothing of the server (its ~80 modules delayed the window): only the wire
    // contract in server/protocol, types, and shared/. The host runs in its own process (host-process.ts), whose
    // modules (HOST_PROCESS_FILES) the main process does not import either. test/main/import-graph.test.ts walks
    // the graph itself.
    files: ['main/**/*.ts'],
    ignores: HOST_PROCESS_FILES,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+server/store/',
              message: 'main/ never imports server/store: the file helpers both use are in shared/',
            },
            {
              // Not store/: a type import allowed by any pattern is allowed by all, so the one above would not see it.
              regex: '^(\\.\\./)+server/(?!protocol/|store/)',
              allowTypeImports: true,
              message:
                'the main process loads nothing of the server: server/protocol, types, or what both need in shared/',
            },
            {
              regex: '^\\./(host-child|host-agent|in-process-host)\\.js$',
              allowTypeImports: true,
              message: 'that module runs in the host process: main reaches the host through host-process.ts',
            },
          ],
        },
      ],
    },
  },
  {
    // The host process is Node with a message port (a utility process, or a forked child in tests): no electron.
    files: HOST_PROCESS_FILES,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'electron', message: 'the host process has no electron: it talks to main over its port' },
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
