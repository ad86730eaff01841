/**
 * GitHub App figures for `npm run bench`: webhook-to-enqueue p99 and job pick-up latency with an idle
 * worker (DESIGN.md budgets: < 100 ms each). Filled in by the GitHub App work.
 */
export async function benchGithubApp(): Promise<void> {
  console.log('\nGitHub App figures: not measured yet');
}
