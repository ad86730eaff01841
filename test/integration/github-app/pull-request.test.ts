import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishPullRequest } from '../../../src/github-app/pull-request.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import type { GitHubClient } from '../../../src/pipeline/github-client.js';
import { NEEDS_REVIEW_LABEL, type PullRequestRequest } from '../../../src/pipeline/publish-change.js';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';
import { installationOctokit, type InstallationOctokit } from '../../helpers/installation-octokit.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const logger = createSilentLogger();

let ghe: GheStandin;
let octokit: InstallationOctokit;

beforeAll(async () => {
  ghe = await startGheStandin();
  await ghe.createRepo(OWNER, REPO, { files: { 'calc.py': 'x = 1\n' } });
  ghe.setPermission(OWNER, REPO, 'alice', 'write');
  octokit = installationOctokit(ghe);
});

afterAll(async () => {
  await ghe?.close();
});

async function request(branch: string, reviewer = 'alice'): Promise<PullRequestRequest> {
  const headSha = await ghe.commitFiles(OWNER, REPO, { branch, files: { 'calc.py': `x = "${branch}"\n` } });
  return {
    owner: OWNER,
    repo: REPO,
    issueNumber: 1,
    issueTitle: 'Fix x',
    head: branch,
    base: 'main',
    headSha,
    reviewer,
    extraLabels: [],
    body: {
      issueNumber: 1,
      fixesKeyword: 'Fixes',
      requester: reviewer,
      tests: null,
      warnings: [],
      sections: [],
      summary: {
        jobId: 'j',
        exitReason: 'agent',
        steps: 1,
        maxSteps: 5,
        promptTokens: 1,
        completionTokens: 1,
        elapsedMs: 1,
        finalMessage: 'ok',
      },
    },
  };
}

describe('publishPullRequest', () => {
  it('creates the missing label once and reuses it', async () => {
    const first = await publishPullRequest(octokit, await request('frognano/issue-1'), logger);
    const second = await publishPullRequest(octokit, await request('frognano/issue-2'), logger);
    expect(first.updated).toBe(false);
    expect(second.updated).toBe(false);
    expect(ghe.state.repoLabels(OWNER, REPO).filter((l) => l.name === NEEDS_REVIEW_LABEL)).toHaveLength(1);
    expect(ghe.state.requestsTo('POST', /\/labels$/).filter((r) => !/\/issues\//.test(r.path))).toHaveLength(
      1,
    );
    expect(ghe.state.labels(OWNER, REPO, second.number)).toEqual([NEEDS_REVIEW_LABEL]);
  });

  it('updates the pull request another run opened meanwhile instead of failing (422 on create)', async () => {
    const req = await request('frognano/issue-3');
    const opened = await publishPullRequest(octokit, req, logger);
    // A client whose first list answers "none open", as it would for a run racing the one above.
    let lists = 0;
    const racing: GitHubClient = {
      ...octokit,
      rest: {
        ...octokit.rest,
        pulls: {
          ...octokit.rest.pulls,
          list: (async (params: Parameters<typeof octokit.rest.pulls.list>[0]) => {
            lists += 1;
            if (lists === 1) return { data: [] };
            return octokit.rest.pulls.list(params);
          }) as unknown as typeof octokit.rest.pulls.list,
        },
      },
    } as GitHubClient;
    const again = await publishPullRequest(racing, { ...req, issueTitle: 'Fix x, again' }, logger);
    expect(again).toMatchObject({ number: opened.number, updated: true });
    const mine = ghe.state.pulls(OWNER, REPO).filter((p) => p.head.ref === 'frognano/issue-3');
    expect(mine).toHaveLength(1);
    expect(mine[0]?.title).toBe('Fix x, again');
  });

  it('does not fail when the review cannot be requested', async () => {
    // GitHub refuses a review request from the pull request's author (here the bot itself).
    const result = await publishPullRequest(octokit, await request('frognano/issue-4', ghe.botLogin), logger);
    expect(result.number).toBeGreaterThan(0);
    expect(ghe.state.checkRuns(OWNER, REPO).some((r) => r.id === result.checkRunId)).toBe(true);
    expect(ghe.state.unhandled).toEqual([]);
    expect(ghe.state.errors).toEqual([]);
  });
});
