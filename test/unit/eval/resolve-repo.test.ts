import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRepoResolver, loadRepoMapping } from '../../../src/eval/resolve-repo.js';

describe('repository resolution', () => {
  let dir: string;
  const init = (path: string, bare = false) =>
    execFileSync('git', ['init', '-q', ...(bare ? ['--bare'] : []), path], {
      env: { PATH: process.env.PATH ?? '' },
    });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'resolve-repo-'));
    init(join(dir, 'mirrors', 'acme', 'widgets'));
    init(join(dir, 'mirrors', 'acme__gadgets.git'), true);
    init(join(dir, 'mirrors', 'tools'));
    await mkdir(join(dir, 'mirrors', 'plain', 'folder'), { recursive: true });
    init(join(dir, 'mapped'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('finds mirrors as DIR/owner/name, DIR/owner__name(.git, bare) and DIR/name', () => {
    const resolve = createRepoResolver({ reposDir: join(dir, 'mirrors') });
    expect(resolve('acme/widgets')).toEqual({ kind: 'path', path: join(dir, 'mirrors', 'acme', 'widgets') });
    expect(resolve('acme/gadgets')).toEqual({
      kind: 'path',
      path: join(dir, 'mirrors', 'acme__gadgets.git'),
    });
    expect(resolve('other/tools')).toEqual({ kind: 'path', path: join(dir, 'mirrors', 'tools') });
  });

  it('prefers the mapping file, with paths relative to it and URLs as they are', async () => {
    const file = join(dir, 'repos.yml');
    await writeFile(file, 'acme/widgets: mapped\nacme/remote: https://git.internal/acme/remote.git\n');
    const mapping = await loadRepoMapping(file);
    const resolve = createRepoResolver({ mapping, reposDir: join(dir, 'mirrors') });
    expect(resolve('acme/widgets')).toEqual({ kind: 'path', path: join(dir, 'mapped') });
    expect(resolve('acme/remote')).toEqual({ kind: 'url', url: 'https://git.internal/acme/remote.git' });
    expect(resolve('acme/gadgets').kind).toBe('path');
  });

  it('reads a JSON mapping and reports bad entries', async () => {
    const file = join(dir, 'repos.json');
    await writeFile(file, JSON.stringify({ 'acme/widgets': 'mapped' }));
    expect((await loadRepoMapping(file)).entries['acme/widgets']).toBe(join(dir, 'mapped'));
    await writeFile(file, JSON.stringify({ 'not-a-repo': 'x', 'acme/a': 3 }));
    await expect(loadRepoMapping(file)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('names every place it tried when nothing matches', async () => {
    const mapping = {
      source: 'repos.yml',
      entries: { 'acme/plain': join(dir, 'mirrors', 'plain', 'folder') },
    };
    const resolve = createRepoResolver({ mapping, reposDir: join(dir, 'mirrors') });
    expect(() => resolve('acme/missing')).toThrow(
      `no repository for "acme/missing": tried repos.yml (no entry for acme/missing), ${join(dir, 'mirrors', 'acme', 'missing')}, ${join(dir, 'mirrors', 'acme', 'missing')}.git, ${join(dir, 'mirrors', 'acme__missing')}`,
    );
    expect(() => resolve('acme/plain')).toThrow('plain/folder (from repos.yml; not a git repository)');
    expect(() => createRepoResolver({})('a/b')).toThrow('no mapping file and no --repos folder given');
  });
});
