import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { z } from 'zod';

/** A JSON object as found in `@octokit/webhooks-examples`. */
export type JsonObject = Record<string, unknown>;

/**
 * Shapes the stand-in copies from GitHub Enterprise Server's own webhook examples
 * (`@octokit/webhooks-examples`, folder `ghes-35/`, the newest GHES folder that has `issues.labeled`).
 * Using them as templates keeps key sets (every `*_url`, `node_id`, `author_association`, …) faithful
 * to GHES without hand-typing them; identity-bearing fields are overwritten by the renderers.
 */
export interface ExampleTemplates {
  /** Whole `issues` / `labeled` payload. */
  issuesLabeled: JsonObject;
  /** Whole `issues` / `unlabeled` payload. */
  issuesUnlabeled: JsonObject;
  /** Whole `pull_request_review` / `submitted` payload (the example is a `commented` review). */
  reviewSubmitted: JsonObject;
  /**
   * Whole `pull_request` / `opened` payload: also the base of `synchronize` and `reopened`, which no
   * ghes-* folder ships (the api.github.com examples of those carry the same keys, plus
   * `before`/`after` for `synchronize`).
   */
  pullRequestOpened: JsonObject;
  user: JsonObject;
  organizationUser: JsonObject;
  repository: JsonObject;
  issue: JsonObject;
  label: JsonObject;
  comment: JsonObject;
  pullRequest: JsonObject;
  review: JsonObject;
  checkRun: JsonObject;
  app: JsonObject;
  installation: JsonObject;
}

/** The examples folder used; GHES 3.5 is the newest one that ships `issues.labeled`. */
export const EXAMPLES_FOLDER = 'ghes-35';

const objectSchema = z.record(z.string(), z.unknown());
const definitionsSchema = z.array(
  z.object({ name: z.string(), examples: z.array(z.looseObject({ action: z.string().optional() })) }),
);

let cached: ExampleTemplates | undefined;

/**
 * Load (once per process) the example payloads and cut them into templates.
 *
 * @throws Error when the examples package lacks an event/action or a nested object this helper
 *   relies on (i.e. after an incompatible upgrade of `@octokit/webhooks-examples`).
 */
export function loadExampleTemplates(): ExampleTemplates {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  const file = require.resolve(`@octokit/webhooks-examples/${EXAMPLES_FOLDER}/index.json`);
  const definitions = definitionsSchema.parse(JSON.parse(readFileSync(file, 'utf8')));

  const example = (event: string, action: string): JsonObject => {
    const found = definitions.find((d) => d.name === event)?.examples.find((e) => e.action === action);
    if (!found) {
      throw new Error(`@octokit/webhooks-examples/${EXAMPLES_FOLDER} has no ${event}.${action} example`);
    }
    return objectSchema.parse(structuredClone(found));
  };
  const child = (parent: JsonObject, key: string, where: string): JsonObject => {
    const parsed = objectSchema.safeParse(parent[key]);
    if (!parsed.success) throw new Error(`example ${where} has no object "${key}"`);
    return parsed.data;
  };

  const issuesLabeled = example('issues', 'labeled');
  const issuesUnlabeled = example('issues', 'unlabeled');
  const reviewSubmitted = example('pull_request_review', 'submitted');
  const pullRequestOpened = example('pull_request', 'opened');
  const checkRunCreated = example('check_run', 'created');
  const checkRun = child(checkRunCreated, 'check_run', 'check_run.created');
  const app = child(checkRun, 'app', 'check_run.created check_run');
  cached = {
    issuesLabeled,
    issuesUnlabeled,
    reviewSubmitted,
    pullRequestOpened,
    user: child(issuesLabeled, 'sender', 'issues.labeled'),
    organizationUser: child(app, 'owner', 'check_run.created check_run.app'),
    repository: child(issuesLabeled, 'repository', 'issues.labeled'),
    issue: child(issuesLabeled, 'issue', 'issues.labeled'),
    label: child(issuesLabeled, 'label', 'issues.labeled'),
    comment: child(example('issue_comment', 'created'), 'comment', 'issue_comment.created'),
    pullRequest: child(pullRequestOpened, 'pull_request', 'pull_request.opened'),
    review: child(reviewSubmitted, 'review', 'pull_request_review.submitted'),
    checkRun,
    app,
    installation: child(example('installation', 'created'), 'installation', 'installation.created'),
  };
  return cached;
}

/**
 * Deep-copy `template`, rewriting every string through `rewrite` (used to point the example's
 * `https://octocoders.github.io/...` URLs at the stand-in), then shallow-assign `overrides`.
 */
export function fromTemplate(
  template: JsonObject,
  rewrite: (s: string) => string,
  overrides: JsonObject,
): JsonObject {
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return rewrite(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    }
    return value;
  };
  return { ...(walk(template) as JsonObject), ...overrides };
}
