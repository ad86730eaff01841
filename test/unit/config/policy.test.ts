import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { LEAF_PROTOCOL } from '../../../src/protocol/protocol.js';
import {
  BUILT_IN_PROTECTED_PATHS,
  BUILT_IN_EVAL_DEFAULTS,
  EMPTY_ADMIN_POLICY,
  checkTriggerAllowed,
  formatClamp,
  parseAdminPolicy,
  resolveEffectivePolicy,
  resolveEvalDefaults,
  type AdminPolicy,
} from '../../../src/config/policy.js';
import { parseRepoConfig } from '../../../src/config/repo-config.js';

const POLICY = `
defaults:
  enabled: false
  maxSteps: 100
  candidates: 3
  protectedPaths: ["deploy/**"]
  instructions: Follow the company style guide.
  sandbox:
    image: registry.example.com/frognano/sandbox:1.4
rules:
  - match: acme/*
    enabled: true
    maxSteps: 60
    sandbox:
      resources:
        limits: { memory: 8Gi, cpu: 4 }
  - match: [acme/big-*, other/tool]
    enabled: true
    maxSteps: 150
    sandbox: { runtimeClassName: gvisor }
  - match: "acme/legacy"
    enabled: false
`;

function policy(text = POLICY): AdminPolicy {
  return parseAdminPolicy(text, 'policy.yaml');
}

function messagesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (isAppError(err, 'CONFIG_INVALID')) return err.details?.messages as string[];
    throw err;
  }
  throw new Error('expected CONFIG_INVALID');
}

describe('resolveEffectivePolicy: layers and precedence', () => {
  it('uses built-in defaults (Leaf limits) when there is no policy and no repository config', () => {
    const eff = resolveEffectivePolicy({ policy: EMPTY_ADMIN_POLICY, repo: 'acme/widgets' });
    expect(eff).toMatchObject({
      repo: 'acme/widgets',
      enabled: true,
      label: 'frognano',
      maxSteps: LEAF_PROTOCOL.limits.max_steps,
      maxTimeSec: LEAF_PROTOCOL.limits.max_total_time_sec,
      maxContextTokens: LEAF_PROTOCOL.limits.max_context_tokens,
      maxTokensPerTurn: LEAF_PROTOCOL.limits.max_completion_tokens_per_turn,
      concurrencyPerRepo: 1,
      branchPrefix: 'frognano/',
      fixesKeyword: 'Fixes',
      testCommand: null,
      instructions: null,
      allowDraftOnFailingTests: false,
      allowedTriggerTeams: [],
      clamps: [],
    });
    expect(eff.protectedPaths).toEqual(
      expect.arrayContaining(['.github/workflows/**', '.github/actions/**', 'CODEOWNERS']),
    );
    expect(eff.sources.maxSteps).toBe('default');
    expect(eff.sources['sandbox.image']).toBe('default');
  });

  it('applies policy defaults, then every matching rule in file order (later rules win per key)', () => {
    const p = policy();
    const widgets = resolveEffectivePolicy({ policy: p, repo: 'acme/widgets' });
    expect(widgets.enabled).toBe(true);
    expect(widgets.maxSteps).toBe(60);
    expect(widgets.candidates).toBe(3);
    expect(widgets.sources).toMatchObject({
      enabled: 'policy:rule[0] (acme/*)',
      maxSteps: 'policy:rule[0] (acme/*)',
      candidates: 'policy:defaults',
      'sandbox.image': 'policy:defaults',
      'sandbox.resources.limits.memory': 'policy:rule[0] (acme/*)',
      'sandbox.resources.requests.memory': 'default',
    });
    // Nested sandbox values merge key by key: the rule set only limits.memory and limits.cpu.
    expect(widgets.sandbox).toEqual({
      image: 'registry.example.com/frognano/sandbox:1.4',
      runtimeClassName: null,
      resources: {
        requests: { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '2Gi' },
        limits: { cpu: '4', memory: '8Gi', 'ephemeral-storage': '10Gi' },
      },
    });

    const big = resolveEffectivePolicy({ policy: p, repo: 'acme/big-data' });
    expect(big.maxSteps).toBe(150);
    expect(big.sources.maxSteps).toBe('policy:rule[1] (acme/big-*)');
    expect(big.sandbox.runtimeClassName).toBe('gvisor');
    expect(big.sandbox.resources.limits.memory).toBe('8Gi'); // from rule 0, not overridden by rule 1

    const legacy = resolveEffectivePolicy({ policy: p, repo: 'acme/legacy' });
    expect(legacy.enabled).toBe(false);
    expect(legacy.sources.enabled).toBe('policy:rule[2] (acme/legacy)');

    const stranger = resolveEffectivePolicy({ policy: p, repo: 'someone/else' });
    expect(stranger.enabled).toBe(false);
    expect(stranger.sources.enabled).toBe('policy:defaults');
  });

  it('matches owner/name globs case-insensitively', () => {
    const eff = resolveEffectivePolicy({ policy: policy(), repo: 'ACME/Widgets' });
    expect(eff.enabled).toBe(true);
    expect(eff.repo).toBe('ACME/Widgets');
  });

  it('layers org then repo configuration over the policy; repo wins', () => {
    const orgConfig = parseRepoConfig(
      'testCommand: make test\nlabel: bot\nbranchPrefix: bots/\n',
      'acme/.github:.github/frognano.yml',
    );
    const repoConfig = parseRepoConfig(
      'testCommand: python3 -m pytest -q\nfixesKeyword: closes\n',
      '.github/frognano.yml',
    );
    const eff = resolveEffectivePolicy({ policy: policy(), repo: 'acme/widgets', orgConfig, repoConfig });
    expect(eff).toMatchObject({
      testCommand: 'python3 -m pytest -q',
      label: 'bot',
      branchPrefix: 'bots/',
      fixesKeyword: 'Closes',
    });
    expect(eff.sources).toMatchObject({
      testCommand: 'repo',
      label: 'org',
      branchPrefix: 'org',
      fixesKeyword: 'repo',
    });
  });

  it('a repo can reset an org test command to detection with null', () => {
    const orgConfig = parseRepoConfig('testCommand: make test\n', 'org');
    const repoConfig = parseRepoConfig('testCommand: null\n', 'repo');
    const eff = resolveEffectivePolicy({ policy: EMPTY_ADMIN_POLICY, repo: 'a/b', orgConfig, repoConfig });
    expect(eff.testCommand).toBeNull();
    expect(eff.sources.testCommand).toBe('repo');
  });

  it('adds protected paths and instructions across all layers instead of replacing them', () => {
    const orgConfig = parseRepoConfig('protectedPaths: ["infra/**"]\ninstructions: Org rule.\n', 'org');
    const repoConfig = parseRepoConfig(
      'protectedPaths: ["deploy/**", "secrets/**"]\ninstructions: Repo rule.\n',
      'repo',
    );
    const eff = resolveEffectivePolicy({ policy: policy(), repo: 'acme/widgets', orgConfig, repoConfig });
    expect(eff.protectedPaths).toEqual([...BUILT_IN_PROTECTED_PATHS, 'deploy/**', 'infra/**', 'secrets/**']);
    expect(eff.instructions).toBe('Follow the company style guide.\n\nOrg rule.\n\nRepo rule.');
    expect(eff.sources.protectedPaths).toBe('default + policy:defaults + org + repo');
    expect(eff.sources.instructions).toBe('policy:defaults + org + repo');
  });

  it('does not let one result change the built-in defaults', () => {
    const eff = resolveEffectivePolicy({ policy: EMPTY_ADMIN_POLICY, repo: 'a/b' });
    eff.allowedTriggerTeams.push('x/y');
    eff.sandbox.resources.limits.memory = '1Ti';
    const again = resolveEffectivePolicy({ policy: EMPTY_ADMIN_POLICY, repo: 'a/b' });
    expect(again.allowedTriggerTeams).toEqual([]);
    expect(again.sandbox.resources.limits.memory).toBe('4Gi');
  });
});

describe('resolveEffectivePolicy: clamping to admin caps', () => {
  it('clamps repository values above the admin caps and reports each clamp', () => {
    const repoConfig = parseRepoConfig(
      'maxSteps: 120\ncandidates: 5\nmaxTimeSec: 600\n',
      '.github/frognano.yml',
    );
    const eff = resolveEffectivePolicy({ policy: policy(), repo: 'acme/widgets', repoConfig });
    expect(eff.maxSteps).toBe(60);
    expect(eff.candidates).toBe(3);
    expect(eff.maxTimeSec).toBe(600); // below the cap: taken as asked
    expect(eff.sources.maxTimeSec).toBe('repo');
    expect(eff.sources.maxSteps).toBe('policy:rule[0] (acme/*)');
    expect(eff.clamps).toEqual([
      {
        key: 'maxSteps',
        requested: 120,
        applied: 60,
        cap: 60,
        source: '.github/frognano.yml',
        capSource: 'policy:rule[0] (acme/*)',
      },
      {
        key: 'candidates',
        requested: 5,
        applied: 3,
        cap: 3,
        source: '.github/frognano.yml',
        capSource: 'policy:defaults',
      },
    ]);
    expect(formatClamp(eff.clamps[0]!)).toBe(
      'maxSteps: .github/frognano.yml asks for 120, above the admin cap of 60 (policy:rule[0] (acme/*)); 60 applies',
    );
  });

  it('lets a repository lower a limit without a clamp', () => {
    const repoConfig = parseRepoConfig('maxSteps: 20\n', 'repo');
    const eff = resolveEffectivePolicy({ policy: policy(), repo: 'acme/widgets', repoConfig });
    expect(eff.maxSteps).toBe(20);
    expect(eff.clamps).toEqual([]);
  });

  it('clamps an org value and names the org file; a repo value replaces it', () => {
    const orgConfig = parseRepoConfig('maxSteps: 140\n', 'acme/.github:.github/frognano.yml');
    const eff = resolveEffectivePolicy({ policy: policy(), repo: 'acme/widgets', orgConfig });
    expect(eff.clamps).toEqual([
      expect.objectContaining({
        key: 'maxSteps',
        requested: 140,
        applied: 60,
        source: 'acme/.github:.github/frognano.yml',
      }),
    ]);
    const both = resolveEffectivePolicy({
      policy: policy(),
      repo: 'acme/widgets',
      orgConfig,
      repoConfig: parseRepoConfig('maxSteps: 30\n', 'repo'),
    });
    expect(both.maxSteps).toBe(30);
    expect(both.clamps).toEqual([]);
  });
});

describe('resolveEffectivePolicy: review.requireSecondPerson', () => {
  const repoFile = (text: string) => parseRepoConfig(text, '.github/frognano.yml');

  it('is on by default; the admin policy may turn it off for some repositories', () => {
    expect(resolveEffectivePolicy({ policy: EMPTY_ADMIN_POLICY, repo: 'acme/a' }).review).toEqual({
      requireSecondPerson: true,
    });
    const policy = parseAdminPolicy(
      'rules:\n  - match: acme/solo\n    review: { requireSecondPerson: false }\n',
      'policy.yaml',
    );
    const solo = resolveEffectivePolicy({ policy, repo: 'acme/solo' });
    expect(solo.review.requireSecondPerson).toBe(false);
    expect(solo.sources['review.requireSecondPerson']).toBe('policy:rule[0] (acme/solo)');
    expect(resolveEffectivePolicy({ policy, repo: 'acme/other' }).review.requireSecondPerson).toBe(true);
  });

  it('lets an org or repository file turn it back on, never off', () => {
    const policy = parseAdminPolicy('defaults:\n  review:\n    requireSecondPerson: false\n', 'policy.yaml');
    const on = repoFile('review:\n  requireSecondPerson: true\n');
    expect(
      resolveEffectivePolicy({ policy, repo: 'acme/a', repoConfig: on }).review.requireSecondPerson,
    ).toBe(true);
    expect(resolveEffectivePolicy({ policy, repo: 'acme/a', orgConfig: on }).review.requireSecondPerson).toBe(
      true,
    );
    let messages: unknown;
    try {
      repoFile('review:\n  requireSecondPerson: false\n');
    } catch (err) {
      messages = isAppError(err, 'CONFIG_INVALID') ? err.details?.messages : err;
    }
    expect(messages).toEqual([
      '.github/frognano.yml: review.requireSecondPerson: can only be true in a repository or organisation file (it may make the rule stricter); only the admin policy can turn it off (got false)',
    ]);
  });
});

describe('checkTriggerAllowed', () => {
  const teamsPolicy = parseAdminPolicy(
    `
defaults:
  allowedTriggerTeams: [acme/platform, ml]
rules:
  - match: acme/secret
    enabled: false
  - match: acme/open
    allowedTriggerTeams: []
`,
    'policy.yaml',
  );

  it('refuses a repository the policy does not enable, with a reason naming the rule', async () => {
    const decision = await checkTriggerAllowed(teamsPolicy, {
      repo: 'acme/secret',
      sender: 'alice',
      teamsOf: async () => ['acme/platform'],
    });
    expect(decision).toEqual({
      allowed: false,
      code: 'REPO_NOT_ALLOWED',
      reason: expect.stringContaining(
        'not enabled for acme/secret by the admin policy (policy:rule[0] (acme/secret))',
      ),
    });
    if (!decision.allowed) expect(decision.reason).toContain('Ask your platform admins');
  });

  it('refuses a sender outside the allowed teams and names the teams', async () => {
    const decision = await checkTriggerAllowed(teamsPolicy, {
      repo: 'acme/widgets',
      sender: 'bob',
      teamsOf: async () => ['acme/frontend'],
    });
    expect(decision).toMatchObject({ allowed: false, code: 'SENDER_NOT_IN_TEAMS' });
    if (!decision.allowed) {
      expect(decision.reason).toContain('@bob is not a member of a team allowed');
      expect(decision.reason).toContain('acme/platform, acme/ml'); // bare slug = team of the repository owner
    }
  });

  it('allows a member of an allowed team (teamsOf, case-insensitive; bare slug = owner org)', async () => {
    expect(
      await checkTriggerAllowed(teamsPolicy, {
        repo: 'acme/widgets',
        sender: 'carol',
        teamsOf: async () => ['ACME/Platform'],
      }),
    ).toEqual({ allowed: true });
    expect(
      await checkTriggerAllowed(teamsPolicy, {
        repo: 'acme/widgets',
        sender: 'dan',
        teamsOf: async () => ['ml'],
      }),
    ).toEqual({ allowed: true });
  });

  it('asks isTeamMember per allowed team until one says yes', async () => {
    const asked: string[] = [];
    const isTeamMember = async (org: string, team: string, user: string): Promise<boolean> => {
      asked.push(`${org}/${team}:${user}`);
      return team === 'ml';
    };
    expect(
      await checkTriggerAllowed(teamsPolicy, { repo: 'acme/widgets', sender: 'erin', isTeamMember }),
    ).toEqual({ allowed: true });
    expect(asked).toEqual(['acme/platform:erin', 'acme/ml:erin']);
  });

  it('allows every sender when a rule empties the team list', async () => {
    expect(
      await checkTriggerAllowed(teamsPolicy, { repo: 'acme/open', sender: 'bob', teamsOf: async () => [] }),
    ).toEqual({ allowed: true });
  });

  it('accepts an already resolved effective policy', async () => {
    const eff = resolveEffectivePolicy({ policy: teamsPolicy, repo: 'acme/secret' });
    expect(
      await checkTriggerAllowed(eff, { repo: 'acme/secret', sender: 'a', teamsOf: async () => [] }),
    ).toMatchObject({ allowed: false, code: 'REPO_NOT_ALLOWED' });
  });
});

describe('parseAdminPolicy: validation', () => {
  it('accepts an empty file as a policy that changes nothing', () => {
    expect(parseAdminPolicy('', 'policy.yaml')).toEqual({ source: 'policy.yaml', defaults: {}, rules: [] });
  });

  it('names the file, key path, problem and what is allowed', () => {
    const messages = messagesOf(() =>
      parseAdminPolicy(
        `
maxSteps: 3
defaults:
  maxSteps: 500
  image: foo
  sandbox:
    imag: y
    resources: { limits: { memory: lots } }
  concurrencyPerRepo: 1.5
  allowedTriggerTeams: platform
rules:
  - match: acme
  - maxSteps: 2
  - match: acme/*
    enabeld: true
`,
        'policy.yaml',
      ),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        'policy.yaml: maxSteps: must be set under "defaults:" (for every repository) or in a rule (for matching repositories)',
        'policy.yaml: defaults.maxSteps: must be a whole number from 1 to 150 (got 500)',
        'policy.yaml: defaults.image: belongs under "sandbox:" (write sandbox.image)',
        'policy.yaml: defaults.sandbox.imag: unknown key; did you mean "image"?',
        'policy.yaml: defaults.sandbox.resources.limits.memory: must be a Kubernetes quantity like "500m", "2", "4Gi" (got "lots")',
        'policy.yaml: defaults.concurrencyPerRepo: must be a whole number from 1 to 50 (got 1.5)',
        expect.stringMatching(
          /^policy\.yaml: defaults\.allowedTriggerTeams: must be a list of teams.*\(got "platform"\)$/,
        ),
        'policy.yaml: rules[0].match: must be an owner/name glob like "acme/*", "acme/widgets" or "*/*", or a list of them (got "acme")',
        'policy.yaml: rules[1].match: is required and must be an owner/name glob like "acme/*", "acme/widgets" or "*/*", or a list of them',
        'policy.yaml: rules[2].enabeld: unknown key; did you mean "enabled"?',
      ]),
    );
    expect(messages).toHaveLength(10);
  });

  it('reports invalid YAML with line and column', () => {
    expect(messagesOf(() => parseAdminPolicy('defaults:\n  maxSteps: 1\n  maxSteps: 2\n', 'p.yaml'))).toEqual(
      ['p.yaml:3:3: invalid YAML: Map keys must be unique'],
    );
  });

  it('throws a non-retryable AppError CONFIG_INVALID whose message starts with the first problem', () => {
    try {
      parseAdminPolicy('defaults: []\n', 'p.yaml');
      expect.unreachable();
    } catch (err) {
      expect(isAppError(err, 'CONFIG_INVALID')).toBe(true);
      expect((err as Error).message).toBe(
        'invalid configuration in p.yaml: p.yaml: defaults: must be a mapping of keys to values (got a list)',
      );
      expect((err as { retryable: boolean }).retryable).toBe(false);
    }
  });
});

describe('parseAdminPolicy: the eval section (frognano-bot eval defaults)', () => {
  it('takes evaluation defaults and resolves the rest from the built-in ones', () => {
    const policy = parseAdminPolicy('eval:\n  candidates: 3\n  concurrency: 4\n', 'policy.yaml');
    expect(policy.eval).toEqual({ candidates: 3, concurrency: 4 });
    expect(resolveEvalDefaults(policy)).toEqual({ ...BUILT_IN_EVAL_DEFAULTS, candidates: 3, concurrency: 4 });
    expect(resolveEvalDefaults()).toEqual(BUILT_IN_EVAL_DEFAULTS);
    expect(BUILT_IN_EVAL_DEFAULTS.maxSteps).toBe(LEAF_PROTOCOL.limits.max_steps);
  });

  it('names bad values and unknown keys of the section', () => {
    const messages = messagesOf(() =>
      parseAdminPolicy('eval:\n  candidates: 9\n  maxStep: 10\n  testTimeoutSec: 5\n', 'policy.yaml'),
    );
    expect(messages).toEqual([
      'policy.yaml: eval.candidates: must be a whole number from 1 to 5 (got 9)',
      'policy.yaml: eval.testTimeoutSec: must be a whole number from 60 to 7200 (got 5)',
      'policy.yaml: eval.maxStep: unknown key; did you mean "maxSteps"?',
    ]);
    expect(messagesOf(() => parseAdminPolicy('evals: {}\n', 'p.yaml'))).toEqual([
      'p.yaml: evals: unknown key; did you mean "eval"?',
    ]);
  });
});

describe('the deprecated key attempts (now candidates)', () => {
  it('is read as candidates in the policy and in repository files, with a warning; candidates wins over it', () => {
    const admin = parseAdminPolicy(
      'defaults:\n  attempts: 3\nrules:\n  - match: acme/*\n    attempts: 2\n    candidates: 4\n',
      'policy.yaml',
    );
    expect(admin.defaults).toEqual({ candidates: 3 });
    expect(admin.rules[0]?.settings).toEqual({ candidates: 4 });
    expect(admin.warnings).toEqual([
      'policy.yaml: defaults.attempts: is deprecated, write "candidates: 3" instead (the same meaning: candidates per job, best-of-N)',
      'policy.yaml: rules[0].attempts: is deprecated and ignored: "candidates" is also set and wins (candidates: 4); remove "attempts"',
    ]);
    const repoConfig = parseRepoConfig('attempts: 5\n', '.github/frognano.yml');
    expect(repoConfig.warnings).toEqual([
      '.github/frognano.yml: attempts: is deprecated, write "candidates: 5" instead (the same meaning: candidates per job, best-of-N)',
    ]);
    const eff = resolveEffectivePolicy({ policy: admin, repo: 'other/repo', repoConfig });
    expect(eff.candidates).toBe(3); // the old key is clamped like the new one
    expect(eff.clamps.map((c) => [c.key, c.requested, c.applied])).toEqual([['candidates', 5, 3]]);
    expect('attempts' in eff).toBe(false);
  });

  it('gives no warnings when only candidates is used', () => {
    expect(parseAdminPolicy('defaults:\n  candidates: 2\n', 'policy.yaml').warnings).toBeUndefined();
    expect(parseRepoConfig('candidates: 2\n', '.github/frognano.yml').warnings).toBeUndefined();
  });
});
