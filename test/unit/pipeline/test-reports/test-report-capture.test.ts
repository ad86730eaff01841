import { describe, expect, it } from 'vitest';
import {
  JEST_REPORT_PATH,
  JUNIT_REPORT_PATH,
  planTestReport,
} from '../../../../src/pipeline/test-reports/test-report-capture.js';

const PYTEST_ENV = { PYTEST_ADDOPTS: `--junitxml=${JUNIT_REPORT_PATH} -p no:cacheprovider` };

describe('planTestReport', () => {
  it('asks pytest for JUnit XML through PYTEST_ADDOPTS, whatever the command', () => {
    for (const command of ['python3 -m pytest -q', 'make test', 'cd sub && pytest']) {
      const plan = planTestReport(command);
      expect(plan.command).toBe(command);
      expect(plan.env).toEqual(PYTEST_ENV);
      expect(plan.files).toEqual([{ path: JUNIT_REPORT_PATH, format: 'junit-xml' }]);
      expect(plan.stdoutFormat).toBeNull();
    }
  });

  it('adds -json to a plain go test command', () => {
    expect(planTestReport('go test ./...')).toMatchObject({
      command: 'go test -json ./...',
      stdoutFormat: 'go-test-json',
    });
    expect(planTestReport('go test -json -run X ./...')).toMatchObject({
      command: 'go test -json -run X ./...',
      stdoutFormat: 'go-test-json',
    });
    expect(planTestReport('go test ./... | tee log')).toMatchObject({
      command: 'go test ./... | tee log',
      stdoutFormat: null,
    });
  });

  it('adds the junit reporter to vitest and the JSON report to jest, also behind npm test', () => {
    expect(planTestReport('npx vitest run').command).toBe(
      `npx vitest run --reporter=default --reporter=junit --outputFile.junit=${JUNIT_REPORT_PATH}`,
    );
    const jest = planTestReport('npm test', { npmTestScript: 'jest --ci' });
    expect(jest.command).toBe(`npm test -- --json --outputFile=${JEST_REPORT_PATH}`);
    expect(jest.files[0]).toEqual({ path: JEST_REPORT_PATH, format: 'jest-json' });
    expect(planTestReport('npm test', { npmTestScript: 'vitest' }).command).toBe(
      `npm test -- --reporter=default --reporter=junit --outputFile.junit=${JUNIT_REPORT_PATH}`,
    );
  });

  it('leaves commands it cannot safely extend as they are', () => {
    expect(planTestReport('npm test', { npmTestScript: 'eslint . && jest' }).command).toBe('npm test');
    expect(planTestReport('npm test', { npmTestScript: 'mocha' }).command).toBe('npm test');
    expect(planTestReport('vitest --watch').command).toBe('vitest --watch');
    expect(planTestReport('jest; echo done').command).toBe('jest; echo done');
  });
});
