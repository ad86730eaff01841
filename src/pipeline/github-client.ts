import type { Octokit } from '@octokit/rest';

/**
 * The part of an installation-authenticated Octokit the pipeline and the pull request code use:
 * the REST endpoint methods (`rest`), `paginate` and raw `request`. Both `new Octokit(...)` from
 * `@octokit/rest` and Probot's `ProbotOctokit` (`context.octokit`, `app.auth(installationId)`) fit.
 */
export type GitHubClient = Pick<Octokit, 'rest' | 'paginate' | 'request'>;
