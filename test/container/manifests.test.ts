import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

// The Kubernetes manifests of deploy/kubernetes (CONTRACT section 18): valid for the API of a
// current Kubernetes release (scripts/container/validate-manifests.mjs), with the security
// settings the contract lists, and resources that the measured footprint of docs/operations.md fits.
jest.setTimeout(120_000);

const root = resolve(__dirname, '..', '..');
const manifestDir = join(root, 'deploy', 'kubernetes');
const validator = join(root, 'scripts', 'container', 'validate-manifests.mjs');

/** A manifest read from YAML, walked field by field as the tests need. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/** Every document of deploy/kubernetes (not its examples folder, which is not applied). */
function applied(): Manifest[] {
  return readdirSync(manifestDir)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .flatMap((name) =>
      parseAllDocuments(readFileSync(join(manifestDir, name), 'utf8'))
        .map((doc) => doc.toJS() as Manifest | null)
        .filter((doc): doc is Manifest => doc !== null),
    );
}

function one(kind: string): Manifest & Record<string, Json> {
  const found = applied().filter((m) => m.kind === kind);
  expect(found.map((m) => m.kind)).toEqual([kind]);
  return found[0] as Manifest & Record<string, Json>;
}

/** A Kubernetes quantity (`128Mi`, `1G`, `512M`, `2`, `250m`) as a number of its base unit. */
function quantity(value: string | number): number {
  const match = /^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(value));
  if (!match) throw new Error(`not a quantity: ${value}`);
  const factor: Record<string, number> = {
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
  };
  return Number(match[1]) * (match[2] ? (factor[match[2]] as number) : 1);
}

/** The "Memory" section of docs/operations.md: each row's shape, settled figures and bounds, in MB. */
function measuredFootprint(): { shape: string; settled: number[]; bound: number[] }[] {
  const text = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
  const section = text.split(/^## /m).find((s) => s.startsWith('Memory')) ?? '';
  const numbers = (cell: string) => [...cell.matchAll(/\d+(?:[.,]\d+)?/g)].map((m) => Number(m[0].replace(',', '')));
  return section
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line) && !/^\|\s*shape\b/.test(line))
    .map((line) => {
      const cells = line.split('|').slice(1, -1);
      return { shape: cells[0] ?? '', settled: numbers(cells[1] ?? ''), bound: numbers(cells[2] ?? '') };
    });
}

const MB = 2 ** 20;

describe('deploy/kubernetes', () => {
  it('every manifest is valid for the Kubernetes API (schemas and unknown fields)', () => {
    const result = spawnSync(process.execPath, [validator], { cwd: root, encoding: 'utf8', timeout: 110_000 });
    expect(result.stdout).not.toMatch(/^error/m);
    expect(result.stdout).toMatch(/^ok deploy\/kubernetes\/deployment\.yaml: Deployment\/gateway$/m);
    for (const kind of ['ConfigMap', 'Service', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'Secret']) {
      expect(result.stdout).toMatch(new RegExp(`^ok deploy/kubernetes/\\S+: ${kind}/`, 'm'));
    }
    expect(result.status).toBe(0);
  });

  it('the validator refuses a wrong type, a missing required field and an unknown field', () => {
    mkdirSync(join(root, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(root, '.tmp', 'manifests-test-'));
    try {
      const deployment = readFileSync(join(manifestDir, 'deployment.yaml'), 'utf8');
      writeFileSync(join(dir, 'typo.yaml'), deployment.replace('readOnlyRootFilesystem:', 'readOnlyRootFilesytem:'));
      writeFileSync(join(dir, 'type.yaml'), deployment.replace('replicas: 2', 'replicas: two'));
      writeFileSync(
        join(dir, 'required.yaml'),
        'apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{name: http}]}\n',
      );
      const result = spawnSync(process.execPath, [validator, dir], { cwd: root, encoding: 'utf8', timeout: 110_000 });
      expect(result.stdout).toMatch(
        /^error .*typo\.yaml: Deployment\/gateway: .*'"readOnlyRootFilesytem"' does not exist/m,
      );
      expect(result.stdout).toMatch(/^error .*type\.yaml: Deployment\/gateway: .*replicas must be integer/m);
      expect(result.stdout).toMatch(
        /^error .*required\.yaml: Service\/x: .*ports\/0 must have required property '?port'?/m,
      );
      expect(result.status).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs two or more non-root, read-only replicas with every capability dropped and seccomp RuntimeDefault', () => {
    const deployment = one('Deployment');
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.containers).toHaveLength(1);
    const container = pod.containers[0];
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container.securityContext.capabilities.add ?? []).toEqual([]);
    expect(container.securityContext.privileged ?? false).toBe(false);
    // Everything the gateway writes is a volume: /tmp, and the image's /data.
    const mounts = (container.volumeMounts as { mountPath: string; readOnly?: boolean }[]).map((m) => m.mountPath);
    expect(mounts).toEqual(expect.arrayContaining(['/tmp', '/data']));
  });

  it('probes /healthz, takes PostgreSQL and Redis from Secrets, and reads the config file from the ConfigMap', () => {
    const deployment = one('Deployment');
    const container = deployment.spec.template.spec.containers[0];
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
      expect(container[probe].httpGet).toEqual({ path: '/healthz', port: 'http' });
    }
    expect(container.ports).toEqual([{ name: 'http', containerPort: 8787, protocol: 'TCP' }]);
    const env = new Map(
      (container.env as { name: string; value?: string; valueFrom?: Json }[]).map((e) => [e.name, e]),
    );
    expect(env.get('NODE_ENV')?.value).toBe('production');
    // Secrets come from Secrets, never from a value in the manifest.
    for (const name of [
      'DATABASE_URL',
      'REDIS_URL',
      'GATEWAY_ENCRYPTION_KEY',
      'JWT_PRIVATE_KEY',
      'GATEWAY_ADMIN_KEY',
    ]) {
      expect(env.get(name)?.value).toBeUndefined();
      expect(env.get(name)?.valueFrom?.secretKeyRef).toEqual({ name: expect.any(String), key: expect.any(String) });
    }
    const configMap = one('ConfigMap');
    const volume = deployment.spec.template.spec.volumes.find(
      (v: { configMap?: { name: string } }) => v.configMap?.name === configMap.metadata.name,
    );
    const mount = container.volumeMounts.find((m: { name: string }) => m.name === volume.name);
    expect(mount.readOnly).toBe(true);
    const configPath = env.get('GATEWAY_CONFIG')?.value as string;
    expect(configPath.startsWith(`${mount.mountPath}/`)).toBe(true);
    const file = configPath.slice(mount.mountPath.length + 1);
    expect(() => JSON.parse(configMap.data[file])).not.toThrow();
  });

  it('a Service, a PodDisruptionBudget and a HorizontalPodAutoscaler select the Deployment and keep two replicas', () => {
    const deployment = one('Deployment');
    const labels = deployment.spec.template.metadata.labels as Record<string, string>;
    const matches = (selector: Record<string, string>) =>
      Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
    expect(matches(deployment.spec.selector.matchLabels)).toBe(true);
    const service = one('Service');
    expect(matches(service.spec.selector)).toBe(true);
    expect(service.spec.ports[0].targetPort).toBe('http');
    const budget = one('PodDisruptionBudget');
    expect(matches(budget.spec.selector.matchLabels)).toBe(true);
    expect(budget.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(budget.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
    const autoscaler = one('HorizontalPodAutoscaler');
    expect(autoscaler.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'gateway' });
    expect(autoscaler.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(autoscaler.spec.maxReplicas).toBeGreaterThan(autoscaler.spec.minReplicas);
    // A rolling update never goes below the replicas it had.
    expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
    // The gateway's 10 s grace fits in the pod's termination grace, after the preStop pause.
    const preStop = Number(deployment.spec.template.spec.containers[0].lifecycle.preStop.exec.command[1]);
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(preStop + 10);
  });

  it('requests and limits memory that the footprint measured in docs/operations.md fits', () => {
    const footprint = measuredFootprint();
    // The table has the shapes measured; if it changes form, this test must be looked at again.
    expect(footprint.filter((row) => row.shape.includes('DATABASE_URL')).length).toBeGreaterThanOrEqual(2);
    expect(footprint.every((row) => row.settled.length > 0)).toBe(true);
    const resources = one('Deployment').spec.template.spec.containers[0].resources;
    // The Deployment's shape (DATABASE_URL and REDIS_URL): its settled figure fits in the request.
    const settled = Math.max(...footprint.filter((r) => r.shape.includes('DATABASE_URL')).flatMap((r) => r.settled));
    expect(quantity(resources.requests.memory)).toBeGreaterThanOrEqual(settled * MB);
    // Every figure measured (the embedded database's first-start peak included) fits in the limit.
    const largest = Math.max(...footprint.flatMap((r) => [...r.settled, ...r.bound]));
    expect(largest).toBeGreaterThanOrEqual(100);
    expect(quantity(resources.limits.memory)).toBeGreaterThanOrEqual(largest * MB);
    const stated = /A container limit of (\d+) MB covers every shape/.exec(
      readFileSync(join(root, 'docs', 'operations.md'), 'utf8'),
    );
    if (stated) expect(quantity(resources.limits.memory)).toBeGreaterThanOrEqual(Number(stated[1]) * MB);
    expect(quantity(resources.requests.cpu)).toBeGreaterThan(0);
    expect(quantity(resources.limits.cpu)).toBeGreaterThanOrEqual(quantity(resources.requests.cpu));
  });
});
