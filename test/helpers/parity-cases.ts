/**
 * The Leaf observation parity corpus (`test/fixtures/leaf-parity/cases.json`, a copy of the shared
 * corpus; provenance in the README beside it): what the reference Leaf tool runner returned for each
 * tool call, byte for byte. This helper loads it (zod-checked), lays out a case's workspace and
 * substitutes `{{WORKSPACE}}`.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** Absolute path of `cases.json` (`<repo>/test/fixtures/leaf-parity/cases.json`). */
export const PARITY_CASES_PATH = fileURLToPath(
  new URL('../fixtures/leaf-parity/cases.json', import.meta.url),
);

/** sha256 (hex) of the corpus as copied from `shared/leaf-parity/` (its README says how to refresh). */
export const PARITY_CASES_SHA256 = '3c21072e943060943ea2a858669300527d4d909bbde8fa90ae2342af4b9da622';

/** sha256 (hex) of a file's bytes. */
export function sha256OfFile(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

const callSchema = z
  .object({
    tool: z.string(),
    args: z.record(z.string(), z.unknown()).optional(),
    raw_arguments: z.string().optional(),
    expected: z.string(),
  })
  .refine(
    (c) => (c.args === undefined) !== (c.raw_arguments === undefined),
    'a call has args or raw_arguments',
  );

const caseSchema = z.object({
  id: z.string(),
  files: z.record(z.string(), z.string()).optional(),
  binary: z.record(z.string(), z.string()).optional(),
  symlinks: z.record(z.string(), z.string()).optional(),
  dirs: z.array(z.string()).optional(),
  generate: z
    .array(
      z.object({
        dir: z.string(),
        count: z.number().int().nonnegative(),
        name: z.string(),
        content: z.string().optional(),
      }),
    )
    .optional(),
  env: z.record(z.string(), z.string()).optional(),
  calls: z.array(callSchema).min(1),
  check_files: z.array(z.string()).optional(),
  expected_files: z.record(z.string(), z.string()),
  reference_files: z.record(z.string(), z.string()).optional(),
});

/** One parity case. */
export type ParityCase = z.infer<typeof caseSchema>;
/** One tool call of a case with its expected observation. */
export type ParityCall = ParityCase['calls'][number];

/** Load and validate the corpus. Throws an Error saying where the file is expected when it is missing. */
export function loadParityCases(path: string = PARITY_CASES_PATH): ParityCase[] {
  if (!existsSync(path)) {
    throw new Error(
      `Leaf parity corpus not found at ${path}: it is part of the repository (test/fixtures/leaf-parity/cases.json); restore it with git`,
    );
  }
  return z.array(caseSchema).parse(JSON.parse(readFileSync(path, 'utf8')));
}

/** Python `str.format` of a generated file name with one integer: `f{:04d}.txt`, `f{}.txt`, `f{:d}`. */
export function formatGeneratedName(template: string, index: number): string {
  return template.replace(
    /\{(?::(0?)(\d*)d)?\}/g,
    (_m, zero: string | undefined, width: string | undefined) => {
      const text = String(index);
      return width ? text.padStart(Number(width), zero ? '0' : ' ') : text;
    },
  );
}

/** Replace `{{WORKSPACE}}` in every string of a JSON value. */
export function substituteWorkspace<T>(value: T, workspace: string): T {
  if (typeof value === 'string') return value.replaceAll('{{WORKSPACE}}', workspace) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => substituteWorkspace(v, workspace)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, substituteWorkspace(v, workspace)]),
    ) as T;
  }
  return value;
}

/** Empty `dir` (keeping the directory itself, which a sandbox may have bind-mounted). */
export function clearDirectory(dir: string): void {
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}

/** Lay out a case's workspace in the existing, empty directory `dir`. */
export function layoutWorkspace(dir: string, c: ParityCase): void {
  const put = (rel: string, data: Buffer | string): void => {
    const target = join(dir, rel);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, data);
  };
  for (const d of c.dirs ?? []) mkdirSync(join(dir, d), { recursive: true });
  for (const [rel, text] of Object.entries(c.files ?? {})) put(rel, text);
  for (const [rel, b64] of Object.entries(c.binary ?? {})) put(rel, Buffer.from(b64, 'base64'));
  for (const g of c.generate ?? []) {
    mkdirSync(join(dir, g.dir), { recursive: true });
    for (let i = 0; i < g.count; i++) put(join(g.dir, formatGeneratedName(g.name, i)), g.content ?? '');
  }
  for (const [rel, target] of Object.entries(c.symlinks ?? {})) {
    const link = join(dir, rel);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(substituteWorkspace(target, dir), link);
  }
}
