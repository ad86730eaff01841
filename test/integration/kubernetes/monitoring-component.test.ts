import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { createServeMetrics, createWorkerMetrics } from '../../../src/observability/metrics.js';
import { renderKustomization } from '../../helpers/kube-standin/render-kustomize.js';

// deploy/components/monitoring: the ServiceMonitors select the Services of both processes by a
// named port that exists, every metric the alert rules and the dashboard use is one the processes
// expose, the rules pass `promtool check rules`, and `kubectl kustomize` renders the component
// on top of an overlay (both tools when installed: scripts/setup.sh installs promtool).

const dir = 'deploy/components/monitoring';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = Record<string, any>;
const readYaml = (file: string): Obj[] =>
  parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((d) => d.toJSON() as Obj);
const has = (cmd: string, args: string[]) => spawnSync(cmd, args).status === 0;

const rules = readYaml('prometheus-rules.yaml')[0]!;
const monitors = readYaml('service-monitors.yaml');
const dashboard = JSON.parse(readFileSync(join(dir, 'grafana-dashboard.json'), 'utf8')) as Obj;
const temp = mkdtempSync(join(tmpdir(), 'frognano-monitoring-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** Every family name both registries expose, plus Prometheus's own `up`. */
async function exposedFamilies(): Promise<Set<string>> {
  const names = new Set(['up']);
  for (const m of [createServeMetrics(), createWorkerMetrics()]) {
    for (const family of await m.registry.getMetricsAsJSON()) names.add(family.name);
  }
  return names;
}

/** Metric names in a PromQL expression (ours and the default process/Node.js ones). */
function metricNames(expr: string): string[] {
  return [
    ...expr.matchAll(/\b((?:frognano|process|nodejs)_[a-z0-9_]+|up)\b(?=\s*[{[(]|\s*$|\s*[)=><])/g),
  ].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, ''));
}

const dashboardExprs = (dashboard.panels as Obj[]).flatMap((p) =>
  ((p.targets as Obj[] | undefined) ?? []).map((t) => String(t.expr)),
);
const ruleExprs = (rules.spec.groups as Obj[]).flatMap((g) => (g.rules as Obj[]).map((r) => String(r.expr)));

describe('deploy/components/monitoring', () => {
  it('monitors the Service of serve and of the worker by a named port they have', () => {
    const services = renderKustomization('deploy/overlays/production').filter(
      (o) => o.kind === 'Service',
    ) as Obj[];
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(['frognano-server', 'frognano-worker']);
    for (const monitor of monitors) {
      const selector = monitor.spec.selector.matchLabels as Record<string, string>;
      const matching = services.filter((s) =>
        Object.entries(selector).every(([k, v]) => s.metadata.labels?.[k] === v),
      );
      expect(matching, monitor.metadata.name).toHaveLength(1);
      const ports = (matching[0]!.spec.ports as Obj[]).map((p) => p.name);
      expect(ports).toContain(monitor.spec.endpoints[0].port);
      expect(monitor.spec.endpoints[0].path).toBe('/metrics');
    }
  });

  it('alerts on the queue, failing jobs, the model server and sandboxes, with metrics that exist', async () => {
    const alerts = (rules.spec.groups as Obj[]).flatMap((g) => (g.rules as Obj[]).map((r) => r.alert));
    expect(alerts).toEqual(
      expect.arrayContaining([
        'FrognanoQueueBackingUp',
        'FrognanoJobsFailing',
        'FrognanoModelServerDown',
        'FrognanoSandboxFailures',
      ]),
    );
    const exposed = await exposedFamilies();
    const used = [...new Set([...ruleExprs, ...dashboardExprs].flatMap(metricNames))];
    expect(used.length).toBeGreaterThan(12);
    expect(used.filter((name) => !exposed.has(name))).toEqual([]);
  });

  it('ships a dashboard whose panels all query the chosen data source', () => {
    expect(dashboard.uid).toBe('frognano-bot');
    const panels = (dashboard.panels as Obj[]).filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThan(10);
    for (const p of panels) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect((p.targets as Obj[]).length, p.title).toBeGreaterThan(0);
    }
  });

  it.skipIf(!has('promtool', ['--version']))('passes `promtool check rules`', () => {
    const file = join(temp, 'rules.yaml');
    writeFileSync(file, JSON.stringify(rules.spec));
    const out = execFileSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    expect(out).toContain(`SUCCESS: ${ruleExprs.length} rules found`);
  });

  it.skipIf(!has('kubectl', ['version', '--client']))('renders with kubectl kustomize on an overlay', () => {
    writeFileSync(
      join(temp, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources:',
        `  - ${relative(temp, resolve('deploy/overlays/production'))}`,
        'components:',
        `  - ${relative(temp, resolve(dir))}`,
      ].join('\n'),
    );
    const out = execFileSync('kubectl', ['kustomize', '--load-restrictor=LoadRestrictionsNone', temp], {
      encoding: 'utf8',
    });
    const kinds = parseAllDocuments(out).map((d) => (d.toJSON() as Obj).kind as string);
    expect(kinds.filter((k) => k === 'ServiceMonitor')).toHaveLength(2);
    expect(kinds).toContain('PrometheusRule');
    const configMap = parseAllDocuments(out)
      .map((d) => d.toJSON() as Obj)
      .find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'frognano-grafana-dashboard');
    expect(configMap?.metadata.labels.grafana_dashboard).toBe('1');
    expect(parse(configMap?.data['frognano-bot.json'] as string).uid).toBe('frognano-bot');
  });
});
