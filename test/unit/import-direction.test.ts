import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The import direction of DESIGN.md is enforced by `npm run lint` (eslint.config.js,
// import-x/no-restricted-paths and import-x/no-cycle). These lint a file that does not exist on
// disk but sits at a real place in src/, with the project's own configuration.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** The rule ids and messages ESLint reports for `code` placed at `filePath` (relative to the root). */
async function problemsOf(
  filePath: string,
  code: string,
): Promise<Array<{ ruleId: string | null; message: string }>> {
  const [result] = await eslint.lintText(code, { filePath: `${ROOT}${filePath}` });
  return (result?.messages ?? []).map(({ ruleId, message }) => ({ ruleId, message }));
}

describe('import direction (npm run lint)', () => {
  it('fails a file in src/config/ that imports from src/leaf/', async () => {
    const problems = await problemsOf(
      'src/config/import-direction-probe.ts',
      "import { runAgentLoop } from '../leaf/agent-loop.js';\nexport const probe = runAgentLoop;\n",
    );
    expect(problems).toEqual([
      {
        ruleId: 'import-x/no-restricted-paths',
        message: expect.stringContaining('src/config must not import src/leaf'),
      },
    ]);
  }, 60_000);

  it('fails the queue importing GitHub code and the pipeline importing the queue', async () => {
    const fromQueue = await problemsOf(
      'src/queue/import-direction-probe.ts',
      "export type { StatusState } from '../github-app/status-comment.js';\n",
    );
    expect(fromQueue.map((p) => p.message)).toEqual([
      expect.stringContaining('src/queue must not import src/github-app'),
    ]);
    const fromPipeline = await problemsOf(
      'src/pipeline/import-direction-probe.ts',
      "export type { JobData } from '../queue/job-data.js';\n",
    );
    expect(fromPipeline.map((p) => p.message)).toEqual([
      expect.stringContaining('src/pipeline must not import src/queue'),
    ]);
  }, 60_000);

  it('lets config, llm and leaf share the protocol data, and bin import anything', async () => {
    for (const folder of ['config', 'llm', 'leaf']) {
      const problems = await problemsOf(
        `src/${folder}/import-direction-probe.ts`,
        "export { LEAF_PROTOCOL } from '../protocol/protocol.js';\n",
      );
      expect(problems, folder).toEqual([]);
    }
    const fromBin = await problemsOf(
      'src/bin/import-direction-probe.ts',
      "export type { JobData } from '../queue/job-data.js';\nexport { runJob } from '../pipeline/run-job.js';\n",
    );
    expect(fromBin).toEqual([]);
  }, 60_000);

  it('lets eval use the pipeline and forbids the pipeline, the queue and leaf from importing eval', async () => {
    const fromEval = await problemsOf(
      'src/eval/import-direction-probe.ts',
      "export { runTests } from '../pipeline/run-tests.js';\nexport type { SandboxFactory } from '../sandbox/sandbox.js';\n",
    );
    expect(fromEval).toEqual([]);
    const evalToQueue = await problemsOf(
      'src/eval/import-direction-probe.ts',
      "export type { JobData } from '../queue/job-data.js';\n",
    );
    expect(evalToQueue.map((p) => p.message)).toEqual([
      expect.stringContaining('src/eval must not import src/queue'),
    ]);
    for (const folder of ['pipeline', 'queue', 'leaf', 'config', 'sandbox']) {
      const problems = await problemsOf(
        `src/${folder}/import-direction-probe.ts`,
        "export { loadTasks } from '../eval/swe-bench-task.js';\n",
      );
      expect(
        problems.map((p) => p.message),
        folder,
      ).toEqual([expect.stringContaining(`src/${folder} must not import src/eval`)]);
    }
  }, 60_000);
});
