/**
 * Only the GitHub App figures of `npm run bench`:
 * `npm run build && npx tsx bench/github-app-standalone.ts [--no-memory]`.
 */
import { benchGithubApp } from './github-app.js';

await benchGithubApp({ workerMemory: !process.argv.includes('--no-memory') });
