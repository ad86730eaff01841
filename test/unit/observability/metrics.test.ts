import { describe, expect, it } from 'vitest';
import { createWorkerMetrics } from '../../../src/observability/metrics.js';

describe('createWorkerMetrics', () => {
  it('records a job from plain facts: outcome, duration, steps, tokens, sandbox failures by driver', async () => {
    const m = createWorkerMetrics({ defaultMetrics: false, sandboxDriver: 'kubernetes' });
    m.recordJob({
      outcome: 'pr_opened',
      durationMs: 90_000,
      run: { steps: 12, promptTokens: 1200, completionTokens: 80 },
    });
    m.recordJob({ outcome: 'sandbox_failed', durationMs: 4_000 });
    m.setScrapeSources({ activeJobs: () => 2, modelServerUp: () => Promise.reject(new Error('down')) });
    const text = await m.registry.metrics();
    expect(text).toMatch(/^frognano_jobs_total\{outcome="pr_opened"\} 1$/m);
    expect(text).toMatch(/^frognano_jobs_total\{outcome="sandbox_failed"\} 1$/m);
    expect(text).toMatch(/^frognano_sandbox_failures_total\{driver="kubernetes"\} 1$/m);
    expect(text).toMatch(/^frognano_job_duration_seconds_sum\{outcome="pr_opened"\} 90$/m);
    expect(text).toMatch(/^frognano_job_steps_count 1$/m);
    expect(text).toMatch(/^frognano_tokens_total\{kind="completion"\} 80$/m);
    expect(text).toMatch(/^frognano_worker_active_jobs 2$/m);
    // A probe that throws reads as down, not as a failed scrape.
    expect(text).toMatch(/^frognano_model_server_up 0$/m);
  });
});
