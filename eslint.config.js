import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';

/**
 * The import direction of DESIGN.md ("Layout"): bin → github-app | queue | eval → pipeline → leaf → llm,
 * sandbox; config, observability and git import none of those; eval/ (`frognano-bot eval`) is at the
 * tier of github-app: it uses the pipeline, the sandbox contract, git, config and observability, and
 * only bin imports it; protocol/ (the Leaf protocol data),
 * text/ (Markdown and text helpers) and app-error.ts are leaves anyone may import. Each entry: a
 * folder of src/ and the folders of src/ it must not import from.
 */
const LAYERS = ['bin', 'github-app', 'queue', 'eval', 'pipeline', 'leaf', 'llm', 'sandbox'];
const FORBIDDEN_IMPORTS = {
  'github-app': ['bin', 'eval', 'leaf', 'llm', 'sandbox'],
  queue: ['bin', 'github-app', 'eval'],
  eval: ['bin', 'github-app', 'queue', 'leaf', 'llm'],
  pipeline: ['bin', 'github-app', 'queue', 'eval'],
  leaf: ['bin', 'github-app', 'queue', 'eval', 'pipeline'],
  llm: ['bin', 'github-app', 'queue', 'eval', 'pipeline', 'leaf', 'sandbox'],
  sandbox: ['bin', 'github-app', 'queue', 'eval', 'pipeline', 'leaf', 'llm'],
  config: LAYERS,
  observability: LAYERS,
  git: LAYERS,
  protocol: [...LAYERS, 'config', 'observability', 'git', 'text'],
  text: [...LAYERS, 'config', 'observability', 'git', 'protocol'],
};

/**
 * Allowed on purpose, against the table above. The trajectory store and journal
 * (observability/trajectory-*.ts) write and read Leaf's trajectory format, whose types live with
 * the agent loop that makes it (leaf/trajectory.ts, llm/chat-model.ts's ChatMessage): a type-only
 * use of the format, not of the loop. Open question: a format module of its own, as for protocol/.
 */
const ALLOWED = {
  'observability:leaf': ['./trajectory.ts'],
  'observability:llm': ['./chat-model.ts'],
};

const importZones = Object.entries(FORBIDDEN_IMPORTS).flatMap(([target, forbidden]) =>
  forbidden.map((from) => ({
    target: `./src/${target}`,
    from: `./src/${from}`,
    except: ALLOWED[`${target}:${from}`] ?? [],
    message: `src/${target} must not import src/${from} (import direction: see DESIGN.md "Layout" and the README's Architecture section).`,
  })),
);
importZones.push({
  target: './src/app-error.ts',
  from: './src',
  except: ['./app-error.ts'],
  message: 'src/app-error.ts is a leaf: it imports nothing of src/.',
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.frognano-*/**', 'examples/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The in-sandbox agent is plain CommonJS run by the sandbox's own node.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      // ESM TypeScript imports name the emitted `.js`; resolve them to the `.ts` source.
      'import-x/resolver-next': [
        createNodeResolver({ extensions: ['.ts', '.js'], extensionAlias: { '.js': ['.ts', '.js'] } }),
      ],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: importZones }],
      'import-x/no-cycle': 'error',
    },
  },
);
