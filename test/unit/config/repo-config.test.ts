import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { parseRepoConfig } from '../../../src/config/repo-config.js';

const SOURCE = '.github/frognano.yml';

function messagesOf(text: string): string[] {
  try {
    parseRepoConfig(text, SOURCE);
  } catch (err) {
    if (isAppError(err, 'CONFIG_INVALID')) return err.details?.messages as string[];
    throw err;
  }
  throw new Error('expected CONFIG_INVALID');
}

describe('parseRepoConfig', () => {
  it('parses every repository key', () => {
    const config = parseRepoConfig(
      `
label: ai-fix
testCommand: python3 -m pytest -q tests/unit
setupCommand: pip install -e .
branchPrefix: bots/frognano-
protectedPaths: ["deploy/**", "*.lock"]
instructions: |
  Keep the public API stable.
maxSteps: 80
maxTimeSec: 1800
candidates: 1
fixesKeyword: Resolves
`,
      SOURCE,
    );
    expect(config).toEqual({
      source: SOURCE,
      settings: {
        label: 'ai-fix',
        testCommand: 'python3 -m pytest -q tests/unit',
        setupCommand: 'pip install -e .',
        branchPrefix: 'bots/frognano-',
        protectedPaths: ['deploy/**', '*.lock'],
        instructions: 'Keep the public API stable.\n',
        maxSteps: 80,
        maxTimeSec: 1800,
        candidates: 1,
        fixesKeyword: 'Resolves',
      },
    });
  });

  it('treats an empty file or a comment-only file as an empty configuration', () => {
    expect(parseRepoConfig('', SOURCE).settings).toEqual({});
    expect(parseRepoConfig('# nothing yet\n', SOURCE).settings).toEqual({});
  });

  it('reports a wrong type with the allowed range and the value given (the Renovate-style example)', () => {
    expect(messagesOf('maxSteps: lots\n')).toEqual([
      '.github/frognano.yml: maxSteps: must be a whole number from 1 to 150 (got "lots")',
    ]);
  });

  it('reports wrong types of every kind', () => {
    expect(
      messagesOf(
        'testCommand: [make, test]\nprotectedPaths: deploy/**\ncandidates: 2.5\nlabel: "  padded "\nfixesKeyword: Solves\n',
      ),
    ).toEqual([
      '.github/frognano.yml: label: must be a label name of 1 to 50 characters without leading or trailing spaces (got "  padded ")',
      '.github/frognano.yml: testCommand: must be a test command as text of 1 to 2000 characters, or null (got a list)',
      '.github/frognano.yml: protectedPaths: must be a list of path globs, like [".github/workflows/**", "deploy/**"] (got "deploy/**")',
      '.github/frognano.yml: candidates: must be a whole number from 1 to 5 (got 2.5)',
      '.github/frognano.yml: fixesKeyword: must be one of GitHub\'s closing keywords: Close, Closes, Closed, Fix, Fixes, Fixed, Resolve, Resolves, Resolved (got "Solves")',
    ]);
  });

  it('reports a value beyond the hard bound (the admin cap itself is applied later, by clamping)', () => {
    expect(messagesOf('maxSteps: 1000\nmaxTimeSec: 10\n')).toEqual([
      '.github/frognano.yml: maxSteps: must be a whole number from 1 to 150 (got 1000)',
      '.github/frognano.yml: maxTimeSec: must be a whole number from 60 to 10800 (got 10)',
    ]);
  });

  it('refuses an unsafe branch prefix', () => {
    expect(messagesOf('branchPrefix: ../main\n')[0]).toMatch(
      /^\.github\/frognano\.yml: branchPrefix: must be 1 to 60 characters .* \(got "\.\.\/main"\)$/,
    );
    expect(messagesOf('branchPrefix: "-x"\n')).toHaveLength(1);
  });

  it('suggests the closest key for a typo, and lists the allowed keys otherwise', () => {
    expect(messagesOf('tesCommand: make test\ntest_command: x\nfoo: 1\n')).toEqual([
      '.github/frognano.yml: tesCommand: unknown key; did you mean "testCommand"?',
      '.github/frognano.yml: test_command: unknown key; did you mean "testCommand"?',
      '.github/frognano.yml: foo: unknown key; allowed keys here: label, testCommand, setupCommand, branchPrefix, protectedPaths, instructions, maxSteps, maxTimeSec, candidates, fixesKeyword, review',
    ]);
  });

  it('refuses admin-only keys with a message saying they are admin-only', () => {
    expect(
      messagesOf(
        'enabled: true\nconcurrencyPerRepo: 4\nimage: evil/image\nsandbox: { runtimeClassName: runc }\nallowDraftOnFailingTests: true\nrules: []\n',
      ),
    ).toEqual([
      '.github/frognano.yml: enabled: is admin-only: only the platform admins can set it, in the admin policy (POLICY_FILE); remove it from this file',
      '.github/frognano.yml: concurrencyPerRepo: is admin-only: only the platform admins can set it, in the admin policy (POLICY_FILE); remove it from this file',
      '.github/frognano.yml: image: is admin-only: the sandbox image is set by the platform admins (sandbox.image in the admin policy); remove it from this file',
      '.github/frognano.yml: sandbox: is admin-only: only the platform admins can set it, in the admin policy (POLICY_FILE); remove it from this file',
      '.github/frognano.yml: allowDraftOnFailingTests: is admin-only: only the platform admins can set it, in the admin policy (POLICY_FILE); remove it from this file',
      '.github/frognano.yml: rules: belongs to the admin policy file, not to a repository configuration (validate a policy with validate-config --policy)',
    ]);
  });

  it('reports invalid YAML with line and column', () => {
    expect(messagesOf('label: ok\ntestCommand: "make test\n')).toEqual([
      '.github/frognano.yml:3:1: invalid YAML: Missing closing "quote',
    ]);
    expect(messagesOf('a: 1\n---\nb: 2\n')).toEqual([
      '.github/frognano.yml:2:1: invalid YAML: the file must hold a single YAML document (found a second "---")',
    ]);
  });

  it('refuses a file that is not a mapping', () => {
    expect(messagesOf('- a\n- b\n')).toEqual([
      '.github/frognano.yml: must be a mapping of keys to values (got a list)',
    ]);
    expect(messagesOf('just text\n')).toEqual([
      '.github/frognano.yml: must be a mapping of keys to values (got "just text")',
    ]);
  });

  it('bounds anchor expansion in untrusted files', () => {
    const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 8; i++)
      bomb.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(',')}]`,
      );
    const messages = messagesOf(bomb.join('\n') + '\n');
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^\.github\/frognano\.yml: invalid YAML: .*alias/i);
  });
});
