import { ProbotOctokit } from 'probot';
import type { GheStandin } from './ghe-standin/index.js';

/** Probot's Octokit class, as the worker and `serve` use it. */
export type InstallationOctokit = InstanceType<typeof ProbotOctokit>;

/**
 * Probot's own installation client against the GitHub Enterprise stand-in, as the worker holds it:
 * installation token exchanged with the App JWT; throttling and retries off so tests do not wait.
 */
export function installationOctokit(ghe: GheStandin): InstallationOctokit {
  return new ProbotOctokit({
    baseUrl: ghe.apiUrl,
    auth: { appId: ghe.appId, privateKey: ghe.privateKey, installationId: ghe.installationId },
    throttle: { enabled: false },
    retry: { enabled: false },
  });
}
