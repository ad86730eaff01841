import { chmod, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILT_IN_DEFAULTS } from '../../../src/config/policy.js';
import { ProbotOctokit } from 'probot';
import { publishPullRequest } from '../../../src/github-app/pull-request.js';
import { createSglangClient } from '../../../src/llm/sglang-client.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { runJob, type JobPolicy, type JobProgress, type RunJobDeps } from '../../../src/pipeline/run-job.js';
import type { JobData } from '../../../src/queue/job-data.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
  type ScriptedTurn,
} from '../../helpers/scripted-model-server.js';

export const OWNER = 'octo-org';
export const REPO = 'calc';
export const REQUESTER = 'alice';

/** A Python project with a bug in add() and a test that catches it. */
export const CALC_FILES: Record<string, string> = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
  'README.md': '# calc\n',
};

/** Model turns that read calc.py, fix add() and finish with `final`. */
export function fixingScript(final = 'I changed add() to return a + b instead of a - b.'): ScriptedTurn[] {
  return [
    { kind: 'tool_calls', calls: [{ name: 'Read', arguments: { file_path: 'calc.py' } }] },
    {
      kind: 'tool_calls',
      calls: [
        { name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a + b' } },
      ],
    },
    { kind: 'final', content: final },
  ];
}

/** The GHE stand-in with the calc repository, an installation client and the local sandbox. */
export interface PipelineFixture {
  ghe: GheStandin;
  root: string;
  deps: (model: ScriptedModelServer, policy?: Partial<JobPolicy>) => RunJobDeps;
  /** Folder under which the local sandboxes make their workspaces (empty when all are destroyed). */
  sandboxRoot: string;
  workDir: string;
  trajectoryDir: string;
  /** Open an issue by the requester and label it; returns the job data a webhook would enqueue. */
  openIssue: (title: string, body: string, repo?: string) => JobData;
  /** Run a job with a scripted model; the model server is closed afterwards. */
  run: (
    data: JobData,
    script: ScriptedTurn[],
    options?: { policy?: Partial<JobPolicy>; signal?: AbortSignal; onProgress?: (p: JobProgress) => void },
  ) => Promise<{ outcome: Outcome; model: ScriptedModelServer; progress: JobProgress[] }>;
  appIdentity: { name: string; email: string };
  close: () => Promise<void>;
}

export async function startPipelineFixture(): Promise<PipelineFixture> {
  const ghe = await startGheStandin();
  await ghe.createRepo(OWNER, REPO, { files: CALC_FILES });
  ghe.setPermission(OWNER, REPO, REQUESTER, 'write');
  const logger = createSilentLogger();
  // Probot's own installation client, as the worker holds it (token exchange with the App JWT).
  const octokit = new ProbotOctokit({
    baseUrl: ghe.apiUrl,
    auth: { appId: ghe.appId, privateKey: ghe.privateKey, installationId: ghe.installationId },
    throttle: { enabled: false },
    retry: { enabled: false },
  });
  const root = await mkdtemp(join(tmpdir(), 'frognano-pipeline-'));
  // A root worker's sandboxes run as an unprivileged uid, which must traverse (not list) it.
  await chmod(root, 0o711);
  const sandboxRoot = join(root, 'sandboxes');
  const workDir = join(root, 'work');
  const trajectoryDir = join(root, 'trajectories');
  const sandboxFactory = createLocalSandboxFactory({ workRoot: sandboxRoot, logger });
  // The bot user's id is not the app id on GitHub; any fixed number serves the tests.
  const appIdentity = {
    name: ghe.botLogin,
    email: `9001+${ghe.botLogin}@users.noreply.${new URL(ghe.url).hostname}`,
  };
  await mkdir(sandboxRoot, { recursive: true });

  const deps = (model: ScriptedModelServer, policy: Partial<JobPolicy> = {}): RunJobDeps => ({
    octokit,
    gitBaseUrl: ghe.url,
    sandboxFactory,
    createModel: () =>
      createSglangClient({ baseURL: model.url, model: 'microsoft/FrogNano-4B-2609', maxRetries: 0, logger }),
    modelUrl: model.url,
    workDir,
    trajectoryDir,
    resolvePolicy: async () => ({ ...BUILT_IN_DEFAULTS, maxSteps: 10, maxTimeSec: 120, ...policy }),
    appIdentity,
    publishPullRequest,
    testTimeoutMs: 60_000,
  });

  let deliveries = 0;
  return {
    ghe,
    root,
    deps,
    sandboxRoot,
    workDir,
    trajectoryDir,
    appIdentity,
    openIssue(title, body, repo = REPO) {
      const issue = ghe.createIssue(OWNER, repo, { title, body, user: REQUESTER });
      const payload = ghe.labelIssue({
        owner: OWNER,
        repo,
        issueNumber: issue.number,
        sender: REQUESTER,
        label: 'frognano',
      });
      const sender = payload.sender as { login: string; id: number };
      deliveries += 1;
      return {
        version: 1,
        deliveryId: `delivery-${deliveries}`,
        installationId: ghe.installationId,
        owner: OWNER,
        repo,
        issueNumber: issue.number,
        label: 'frognano',
        triggeredBy: { login: sender.login, id: sender.id },
        enqueuedAt: new Date().toISOString(),
      };
    },
    async run(data, script, options = {}) {
      const model = await startScriptedModelServer({ script });
      const progress: JobProgress[] = [];
      try {
        const outcome = await runJob(data, deps(model, options.policy), {
          signal: options.signal ?? new AbortController().signal,
          logger,
          jobId: `${OWNER}.${data.repo}.${data.issueNumber}.${data.deliveryId}`,
          progress: async (p) => {
            progress.push(p);
            options.onProgress?.(p);
          },
        });
        return { outcome, model, progress };
      } finally {
        await model.close();
      }
    },
    async close() {
      await ghe.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** Entries left in a folder (missing folder: none). */
export async function leftovers(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}
