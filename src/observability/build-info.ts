import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** What `frognano_build_info` and `--version` report about the running build. */
export interface BuildInfo {
  /** `version` of package.json, e.g. `0.1.0`. */
  version: string;
  /** Git commit the build was made from (40 hex digits), or `unknown`. */
  commit: string;
  /** Node.js version running the process, e.g. `v24.11.0`. */
  node: string;
}

const packageSchema = z.object({ version: z.string().min(1) });
const buildFileSchema = z.object({ commit: z.string().regex(/^[0-9a-f]{7,40}$/) });

/** Parse the JSON file at `url`, or undefined when it is missing or not JSON. */
function readJson(url: URL): unknown {
  try {
    return JSON.parse(readFileSync(url, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

let cached: BuildInfo | undefined;

/**
 * The build's version, commit and Node.js version. The commit comes from, in order: the
 * `FROGNANO_COMMIT` environment variable (set by the image build, `--build-arg FROGNANO_COMMIT=…`),
 * `build-info.json` next to the compiled code (written by `npm run build` from `git rev-parse HEAD`),
 * else `unknown` (a build from a tarball without git). Read once per process; never throws.
 */
export function readBuildInfo(): BuildInfo {
  if (cached) return cached;
  // src/observability/ and dist/observability/ are both two levels below the package root.
  const pkg = packageSchema.safeParse(readJson(new URL('../../package.json', import.meta.url)));
  const file = buildFileSchema.safeParse(readJson(new URL('../build-info.json', import.meta.url)));
  const fromEnv = process.env.FROGNANO_COMMIT?.trim();
  cached = {
    version: pkg.success ? pkg.data.version : 'unknown',
    commit: fromEnv || (file.success ? file.data.commit : 'unknown'),
    node: process.version,
  };
  return cached;
}
