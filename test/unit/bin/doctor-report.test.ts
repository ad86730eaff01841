import { describe, expect, it } from 'vitest';
import { formatDoctorReport, summarizeChecks, type DoctorCheck } from '../../../src/bin/commands/doctor.js';

const ok: DoctorCheck = { name: 'Redis at redis://127.0.0.1:6379', status: 'ok' };
const failed: DoctorCheck = {
  name: 'Kubernetes API',
  status: 'failed',
  detail: 'HTTP 401',
  fix: 'set KUBECONFIG',
};
const skipped: DoctorCheck = { name: 'sandbox pod starts', status: 'skipped', detail: 'no API' };

describe('doctor report', () => {
  it('counts skipped checks apart from failed ones', () => {
    expect(summarizeChecks([ok, ok])).toBe('All 2 checks passed.');
    expect(summarizeChecks([ok, failed, skipped, skipped])).toBe('1 of 4 checks failed, 2 skipped.');
    expect(summarizeChecks([ok, skipped])).toBe('1 of 2 checks passed, 1 skipped.');
    expect(summarizeChecks([failed])).toBe('1 of 1 checks failed.');
  });

  it('marks a skipped check with "-", a failed one with ✗ and its fix', () => {
    expect(formatDoctorReport([ok, failed, skipped]).split('\n')).toEqual([
      '✓ Redis at redis://127.0.0.1:6379',
      '✗ Kubernetes API — HTTP 401; fix: set KUBECONFIG',
      '- sandbox pod starts — skipped: no API',
      '1 of 3 checks failed, 1 skipped.',
      '',
    ]);
  });
});
