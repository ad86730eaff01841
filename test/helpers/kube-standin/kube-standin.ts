import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { Pod } from 'kubernetes-models/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { WebSocketServer, type WebSocket } from 'ws';
import { PodRuntime } from './pod-runtime.js';

/**
 * A Kubernetes API stand-in on loopback, for testing the sandbox driver and `doctor` without a
 * cluster. It speaks the real wire formats of the parts the driver uses:
 *
 * - `pods`: create (validated against the OpenAPI schema with `kubernetes-models`; 422 otherwise),
 *   get, list (equality `labelSelector`), delete; status Pending → Running as soon as the pod's
 *   bubblewrap "container" ({@link PodRuntime}) is up;
 * - `networkpolicies`: create, get, list, delete. A pod created while a NetworkPolicy with an empty
 *   egress list selects it gets no network at all, else the host's (unless `ignoreNetworkPolicy`,
 *   the behaviour of CNIs such as flannel: then every pod gets the host's network);
 * - `selfsubjectaccessreviews`: allowed unless listed in `denied`;
 * - `pods/{name}/exec` over WebSocket, subprotocol `v4.channel.k8s.io`: channel 0 stdin, 1 stdout,
 *   2 stderr, 3 status (`{"status":"Success"}` or `Failure`/`NonZeroExitCode` with the code in
 *   `details.causes[ExitCode]`); a closed socket does not kill the command, as in a real kubelet.
 *
 * Every request needs `Authorization: Bearer <token>` (401 otherwise). Faults are injected through
 * {@link KubeStandin.faults} and {@link KubeStandin.killPod}.
 */

/** Faults a test can turn on; each is read when the matching request arrives. */
export interface KubeStandinFaults {
  /** Pods (of this image, or any image when `true`) never pull: ErrImagePull, then ImagePullBackOff. */
  imagePull: boolean | string;
  /** Pods stay Pending with `PodScheduled=False, Unschedulable`. */
  unschedulable: boolean;
  /** Pod creates are refused with 403 "exceeded quota". */
  quotaExceeded: boolean;
  /** The next exec's socket is closed without a status after this many stdout bytes (one-shot). */
  cutNextExecAfterBytes: number | null;
  /** One byte of the next exec's stdin that is at least this long is flipped (one-shot). */
  corruptNextStdinOfAtLeast: number | null;
  /** Pods are started this many milliseconds after creation (0: at once). */
  startDelayMs: number;
  /**
   * Like a proxy or load balancer with an idle timeout: exec sockets on which the client sent
   * nothing (no frame, no ping) for this many milliseconds are closed. `null`: never.
   */
  closeIdleExecAfterMs: number | null;
}

/** Options of {@link startKubeStandin}. */
export interface KubeStandinOptions {
  /** Namespaces that exist; requests for others get 404. Default `['sandboxes']`. */
  namespaces?: string[];
  /** Bearer token accepted. Default: random. */
  token?: string;
  /** Access denied in SelfSubjectAccessReviews, as `"<verb> <resource>[/<subresource>]"`. */
  denied?: string[];
  /** Behave like a CNI that ignores NetworkPolicy: every pod can reach the host's network. */
  ignoreNetworkPolicy?: boolean;
}

/** A running exec, as seen by the stand-in. */
export interface StandinExec {
  namespace: string;
  pod: string;
  command: string[];
}

/** The running stand-in. */
export interface KubeStandin {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  token: string;
  faults: KubeStandinFaults;
  /** SelfSubjectAccessReview denials, editable. */
  denied: Set<string>;
  /** A KubeConfig pointing at the stand-in (`token` overrides the accepted one, to test 401). */
  kubeConfig(options?: { token?: string; namespace?: string }): KubeConfig;
  /** Names of the pods in a namespace. */
  podNames(namespace: string): string[];
  /** Names of the NetworkPolicies in a namespace. */
  policyNames(namespace: string): string[];
  /**
   * Make a pod die: `Deleted` (removed as by `kubectl delete`), `Evicted` (phase Failed, reason
   * Evicted) or `OOMKilled` (container terminated with reason OOMKilled, exit 137).
   */
  killPod(namespace: string, name: string, how: 'Deleted' | 'Evicted' | 'OOMKilled'): Promise<void>;
  /** Resolves with the next exec whose command contains `includes` (bounded by `timeoutMs`). */
  nextExec(includes: string, timeoutMs?: number): Promise<StandinExec>;
  /** Requests received, `METHOD path` (for assertions). */
  requests: string[];
  /** Every pod accepted by a create, as stored (kept after the pod is deleted), oldest first. */
  createdPods: Loose[];
  close(): Promise<void>;
}

interface PodEntry {
  pod: Loose;
  runtime: PodRuntime | null;
  hostDir: string;
  /** GETs answered while the image "cannot be pulled" (ErrImagePull first, then BackOff). */
  pullPolls: number;
}

type Json = Record<string, unknown>;
/** Wire JSON the stand-in reads and edits freely (bodies are schema-validated on create). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = Record<string, any>;

const SUBPROTOCOL = 'v4.channel.k8s.io';

/**
 * Start the stand-in on 127.0.0.1 (a free port). Needs root and bubblewrap (`bwrap`).
 *
 * @throws Error naming the fix when not run as root.
 */
export async function startKubeStandin(options: KubeStandinOptions = {}): Promise<KubeStandin> {
  if (process.getuid?.() !== 0) {
    // nsenter into an unprivileged bubblewrap sandbox's namespaces is refused (EPERM on ns/ipc).
    throw new Error(
      "the Kubernetes API stand-in needs root: exec joins the pod's bubblewrap namespaces with nsenter. " +
        "Run these tests as root (as CI does), e.g. in the project's container.",
    );
  }
  const token = options.token ?? randomBytes(16).toString('hex');
  const namespaces = new Set(options.namespaces ?? ['sandboxes']);
  const denied = new Set(options.denied ?? []);
  const root = await mkdtemp(path.join(tmpdir(), 'kube-standin-'));
  const pods = new Map<string, PodEntry>();
  const createdPods: Loose[] = [];
  const policies = new Map<string, Json>();
  const faults: KubeStandinFaults = {
    imagePull: false,
    unschedulable: false,
    quotaExceeded: false,
    cutNextExecAfterBytes: null,
    corruptNextStdinOfAtLeast: null,
    startDelayMs: 0,
    closeIdleExecAfterMs: null,
  };
  const requests: string[] = [];
  const execWaiters: { includes: string; resolve: (e: StandinExec) => void }[] = [];
  const sockets = new Set<Socket>();
  const children = new Set<{ kill: () => void }>();
  let resourceVersion = 1;
  const key = (ns: string, name: string): string => `${ns}/${name}`;

  // ---------------------------------------------------------------------------------------------
  // helpers

  const send = (res: ServerResponse, code: number, body: unknown): void => {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const status = (code: number, reason: string, message: string, details?: Json): Json => ({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  });
  const readBody = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? JSON.parse(text) : undefined;
  };
  const authorized = (req: IncomingMessage): boolean => req.headers.authorization === `Bearer ${token}`;
  const matchesSelector = (labels: Record<string, string> | undefined, selector: string | null): boolean => {
    if (!selector) return true;
    return selector.split(',').every((term) => {
      const t = term.trim();
      if (!t) return true;
      const eq = /^([^!=]+)(==?|!=)(.*)$/.exec(t);
      if (eq) {
        const value = labels?.[eq[1]!.trim()];
        return eq[2] === '!=' ? value !== eq[3]!.trim() : value === eq[3]!.trim();
      }
      if (t.startsWith('!')) return labels?.[t.slice(1)] === undefined;
      return labels?.[t] !== undefined;
    });
  };
  const selects = (policy: Json, podLabels: Record<string, string> | undefined): boolean => {
    const spec = policy.spec as { podSelector?: { matchLabels?: Record<string, string> } } | undefined;
    const match = spec?.podSelector?.matchLabels ?? {};
    return Object.entries(match).every(([k, v]) => podLabels?.[k] === v);
  };
  const egressDenied = (ns: string, podLabels: Record<string, string> | undefined): boolean => {
    if (options.ignoreNetworkPolicy) return false;
    for (const [k, policy] of policies) {
      if (!k.startsWith(`${ns}/`) || !selects(policy, podLabels)) continue;
      const spec = policy.spec as { policyTypes?: string[]; egress?: unknown[] };
      if (spec.policyTypes?.includes('Egress') && (spec.egress ?? []).length === 0) return true;
    }
    return false;
  };

  const podStatusNow = (entry: PodEntry): Json => {
    const pod = entry.pod;
    const image = String(pod.spec?.containers?.[0]?.image ?? '');
    const containerName = String(pod.spec?.containers?.[0]?.name ?? 'c');
    const base = { name: containerName, image, imageID: '', ready: false, restartCount: 0 };
    if (pod.status?.phase === 'Failed') return pod.status;
    if (faults.unschedulable) {
      return {
        phase: 'Pending',
        conditions: [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message: '0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available.',
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      };
    }
    if (faults.imagePull === true || faults.imagePull === image) {
      entry.pullPolls += 1;
      const reason = entry.pullPolls <= 1 ? 'ErrImagePull' : 'ImagePullBackOff';
      return {
        phase: 'Pending',
        conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: new Date().toISOString() }],
        containerStatuses: [
          {
            ...base,
            state: {
              waiting: {
                reason,
                message:
                  reason === 'ErrImagePull'
                    ? `failed to pull and unpack image "${image}": not found`
                    : `Back-off pulling image "${image}"`,
              },
            },
          },
        ],
      };
    }
    if (entry.runtime?.alive) {
      return {
        phase: 'Running',
        podIP: '10.0.0.10',
        startTime: pod.metadata.creationTimestamp,
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: pod.metadata.creationTimestamp },
          { type: 'Ready', status: 'True', lastTransitionTime: pod.metadata.creationTimestamp },
        ],
        containerStatuses: [
          {
            ...base,
            ready: true,
            started: true,
            state: { running: { startedAt: pod.metadata.creationTimestamp } },
          },
        ],
      };
    }
    return {
      phase: 'Pending',
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: pod.metadata.creationTimestamp },
      ],
      containerStatuses: [{ ...base, state: { waiting: { reason: 'ContainerCreating' } } }],
    };
  };
  const podView = (entry: PodEntry): Json => ({ ...entry.pod, status: podStatusNow(entry) });

  const startRuntime = async (ns: string, entry: PodEntry): Promise<void> => {
    const spec = entry.pod.spec as {
      containers: {
        command?: string[];
        workingDir?: string;
        volumeMounts?: { name: string; mountPath: string }[];
      }[];
      securityContext?: { runAsUser?: number };
    };
    const container = spec.containers[0]!;
    const mounts = (container.volumeMounts ?? []).map((m) => ({ hostName: m.name, mountPath: m.mountPath }));
    try {
      const runtime = await PodRuntime.start({
        hostDir: entry.hostDir,
        mounts,
        workingDir: container.workingDir ?? '/',
        command: container.command ?? ['/bin/sh', '-c', 'sleep infinity'],
        isolatedNetwork: egressDenied(ns, entry.pod.metadata.labels),
        uid: spec.securityContext?.runAsUser ?? 1000,
        hostname: String(entry.pod.metadata.name).slice(0, 63),
      });
      if (!pods.has(key(ns, entry.pod.metadata.name))) {
        await runtime.kill();
        return;
      }
      entry.runtime = runtime;
      children.add({ kill: () => void runtime.kill() });
    } catch (err) {
      entry.pod.status = {
        phase: 'Failed',
        reason: 'StartError',
        message: (err as Error).message,
      };
    }
  };

  // ---------------------------------------------------------------------------------------------
  // REST

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://standin');
    const method = req.method ?? 'GET';
    requests.push(`${method} ${url.pathname}`);
    if (!authorized(req)) {
      send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
      return;
    }
    if (method === 'GET' && url.pathname === '/version') {
      send(res, 200, { major: '1', minor: '31', gitVersion: 'v1.31.0-standin', platform: 'linux/amd64' });
      return;
    }
    if (method === 'POST' && url.pathname === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews') {
      const body = (await readBody(req)) as {
        spec?: {
          resourceAttributes?: { verb?: string; resource?: string; subresource?: string; namespace?: string };
        };
      };
      const a = body?.spec?.resourceAttributes ?? {};
      const resource = a.subresource ? `${a.resource}/${a.subresource}` : String(a.resource);
      const deniedNow =
        denied.has(`${a.verb} ${resource}`) || (a.namespace !== undefined && !namespaces.has(a.namespace));
      send(res, 201, {
        kind: 'SelfSubjectAccessReview',
        apiVersion: 'authorization.k8s.io/v1',
        metadata: {},
        spec: body?.spec ?? {},
        status: deniedNow
          ? { allowed: false, reason: 'no RBAC policy matched' }
          : { allowed: true, reason: 'RBAC: allowed' },
      });
      return;
    }
    const m =
      /^\/(api\/v1|apis\/networking\.k8s\.io\/v1)\/namespaces\/([^/]+)\/(pods|networkpolicies)(?:\/([^/]+))?$/.exec(
        url.pathname,
      );
    if (!m) {
      send(
        res,
        404,
        status(404, 'NotFound', `the server could not find the requested resource (${url.pathname})`),
      );
      return;
    }
    const [, group, ns, resource, name] = m as unknown as [
      string,
      string,
      string,
      string,
      string | undefined,
    ];
    if ((resource === 'pods') !== (group === 'api/v1')) {
      send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      return;
    }
    if (!namespaces.has(ns)) {
      send(
        res,
        404,
        status(404, 'NotFound', `namespaces "${ns}" not found`, { name: ns, kind: 'namespaces' }),
      );
      return;
    }
    if (resource === 'pods') await handlePods(req, res, method, ns, name, url);
    else await handlePolicies(req, res, method, ns, name, url);
  };

  const handlePods = async (
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    ns: string,
    name: string | undefined,
    url: URL,
  ): Promise<void> => {
    if (method === 'POST' && !name) {
      const body = (await readBody(req)) as Loose;
      const podName = String(body?.metadata?.name ?? '');
      try {
        new Pod(body).validate();
      } catch (err) {
        send(res, 422, status(422, 'Invalid', `Pod "${podName}" is invalid: ${(err as Error).message}`));
        return;
      }
      if (faults.quotaExceeded) {
        send(
          res,
          403,
          status(
            403,
            'Forbidden',
            `pods "${podName}" is forbidden: exceeded quota: sandboxes, requested: pods=1, used: pods=16, limited: pods=16`,
            { name: podName, kind: 'pods' },
          ),
        );
        return;
      }
      if (pods.has(key(ns, podName))) {
        send(res, 409, status(409, 'AlreadyExists', `pods "${podName}" already exists`));
        return;
      }
      const now = new Date().toISOString();
      const pod: Loose = {
        ...body,
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          ...body.metadata,
          namespace: ns,
          uid: randomUUID(),
          resourceVersion: String(++resourceVersion),
          creationTimestamp: now,
        },
        status: { phase: 'Pending' },
      };
      const entry: PodEntry = { pod, runtime: null, hostDir: path.join(root, ns, podName), pullPolls: 0 };
      pods.set(key(ns, podName), entry);
      createdPods.push(pod);
      const image = String(pod.spec?.containers?.[0]?.image ?? '');
      if (!faults.unschedulable && !(faults.imagePull === true || faults.imagePull === image)) {
        const start = (): void => void startRuntime(ns, entry);
        if (faults.startDelayMs > 0) setTimeout(start, faults.startDelayMs).unref();
        else start();
      }
      send(res, 201, podView(entry));
      return;
    }
    if (method === 'GET' && !name) {
      const selector = url.searchParams.get('labelSelector');
      const items = [...pods.entries()]
        .filter(([k, e]) => k.startsWith(`${ns}/`) && matchesSelector(e.pod.metadata.labels, selector))
        .map(([, e]) => podView(e));
      send(res, 200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(resourceVersion) },
        items,
      });
      return;
    }
    const entry = name ? pods.get(key(ns, name)) : undefined;
    if (!name || !entry) {
      send(res, 404, status(404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' }));
      return;
    }
    if (method === 'GET') {
      send(res, 200, podView(entry));
      return;
    }
    if (method === 'DELETE') {
      pods.delete(key(ns, name));
      const view = podView(entry);
      await entry.runtime?.kill();
      await rm(entry.hostDir, { recursive: true, force: true });
      send(res, 200, view);
      return;
    }
    send(res, 405, status(405, 'MethodNotAllowed', `${method} is not supported by the stand-in`));
  };

  const handlePolicies = async (
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    ns: string,
    name: string | undefined,
    url: URL,
  ): Promise<void> => {
    if (method === 'POST' && !name) {
      const body = (await readBody(req)) as Loose;
      const policyName = String(body?.metadata?.name ?? '');
      try {
        new NetworkPolicy(body).validate();
      } catch (err) {
        send(
          res,
          422,
          status(422, 'Invalid', `NetworkPolicy "${policyName}" is invalid: ${(err as Error).message}`),
        );
        return;
      }
      if (policies.has(key(ns, policyName))) {
        send(
          res,
          409,
          status(409, 'AlreadyExists', `networkpolicies.networking.k8s.io "${policyName}" already exists`),
        );
        return;
      }
      const policy = {
        ...body,
        metadata: {
          ...body.metadata,
          namespace: ns,
          uid: randomUUID(),
          resourceVersion: String(++resourceVersion),
          creationTimestamp: new Date().toISOString(),
        },
      };
      policies.set(key(ns, policyName), policy);
      send(res, 201, policy);
      return;
    }
    if (method === 'GET' && !name) {
      const selector = url.searchParams.get('labelSelector');
      const items = [...policies.entries()]
        .filter(
          ([k, p]) =>
            k.startsWith(`${ns}/`) &&
            matchesSelector((p.metadata as Json).labels as Record<string, string>, selector),
        )
        .map(([, p]) => p);
      send(res, 200, {
        kind: 'NetworkPolicyList',
        apiVersion: 'networking.k8s.io/v1',
        metadata: { resourceVersion: String(resourceVersion) },
        items,
      });
      return;
    }
    const policy = name ? policies.get(key(ns, name)) : undefined;
    if (!name || !policy) {
      send(res, 404, status(404, 'NotFound', `networkpolicies.networking.k8s.io "${name}" not found`));
      return;
    }
    if (method === 'GET') send(res, 200, policy);
    else if (method === 'DELETE') {
      policies.delete(key(ns, name));
      send(res, 200, status(200, '', 'deleted'));
    } else send(res, 405, status(405, 'MethodNotAllowed', `${method} is not supported by the stand-in`));
  };

  // ---------------------------------------------------------------------------------------------
  // exec

  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 0,
    handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
  });

  const refuseUpgrade = (socket: Socket, code: number, body: Json): void => {
    const text = JSON.stringify(body);
    const reason =
      code === 404 ? 'Not Found' : code === 401 ? 'Unauthorized' : code === 403 ? 'Forbidden' : 'Bad Request';
    socket.end(
      `HTTP/1.1 ${code} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
    );
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, status(500, 'InternalError', (err as Error).message));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    // A client that goes away mid-handshake resets the socket; that is not the stand-in's error.
    socket.on('error', () => undefined);
    const url = new URL(req.url ?? '/', 'http://standin');
    requests.push(`UPGRADE ${url.pathname}`);
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname);
    if (!authorized(req)) return refuseUpgrade(socket, 401, status(401, 'Unauthorized', 'Unauthorized'));
    if (!m)
      return refuseUpgrade(
        socket,
        404,
        status(404, 'NotFound', 'the server could not find the requested resource'),
      );
    const [, ns, podName] = m as unknown as [string, string, string];
    const entry = pods.get(key(ns, podName));
    if (!entry) return refuseUpgrade(socket, 404, status(404, 'NotFound', `pods "${podName}" not found`));
    if (!entry.runtime?.alive) {
      const phase = String(podStatusNow(entry).phase);
      return refuseUpgrade(
        socket,
        400,
        status(
          400,
          'BadRequest',
          `cannot exec into a container in a ${phase === 'Failed' ? 'completed' : 'pending'} pod; current phase is ${phase}`,
        ),
      );
    }
    const command = url.searchParams.getAll('command');
    if (command.length === 0)
      return refuseUpgrade(socket, 400, status(400, 'BadRequest', 'you must specify at least 1 command'));
    const protocols = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim());
    if (!protocols.includes(SUBPROTOCOL)) {
      return refuseUpgrade(
        socket,
        400,
        status(400, 'BadRequest', `only ${SUBPROTOCOL} is supported by the stand-in`),
      );
    }
    wss.handleUpgrade(req, socket, head, (ws) => runExec(ws, ns, entry, command));
  });

  const runExec = (ws: WebSocket, ns: string, entry: PodEntry, command: string[]): void => {
    const runtime = entry.runtime!;
    const info = { namespace: ns, pod: String(entry.pod.metadata.name), command };
    for (const [i, w] of execWaiters.entries()) {
      if (command.some((c) => c.includes(w.includes))) {
        execWaiters.splice(i, 1);
        w.resolve(info);
        break;
      }
    }
    const child = runtime.exec(command);
    child.on('error', () => undefined);
    const handle = { kill: () => child.kill('SIGKILL') };
    children.add(handle);
    let open = true;
    let cutAfter = faults.cutNextExecAfterBytes;
    faults.cutNextExecAfterBytes = null;
    let sentStdout = 0;
    const frame = (channel: number, data: Buffer): Buffer => Buffer.concat([Buffer.from([channel]), data]);
    const forward = (channel: number) => (chunk: Buffer) => {
      if (!open) return;
      if (channel === 1 && cutAfter !== null) {
        const room = cutAfter - sentStdout;
        if (chunk.length >= room) {
          if (room > 0) ws.send(frame(1, chunk.subarray(0, room)));
          open = false;
          cutAfter = null;
          ws.terminate();
          return;
        }
      }
      if (channel === 1) sentStdout += chunk.length;
      ws.send(frame(channel, chunk));
    };
    child.stdout!.on('data', forward(1));
    child.stderr!.on('data', forward(2));
    child.stdin!.on('error', () => undefined);
    ws.on('message', (data: Buffer) => {
      if (data.length === 0 || data[0] !== 0) return;
      let payload = data.subarray(1);
      const corrupt = faults.corruptNextStdinOfAtLeast;
      if (corrupt !== null && payload.length > 0) {
        faults.corruptNextStdinOfAtLeast = null;
        payload = Buffer.from(payload);
        payload[payload.length - 1] = payload[payload.length - 1]! ^ 0xff;
      }
      if (!child.stdin!.destroyed) child.stdin!.write(payload);
    });
    let lastActivity = Date.now();
    ws.on('ping', () => {
      lastActivity = Date.now();
    });
    ws.on('message', () => {
      lastActivity = Date.now();
    });
    const idleLimit = faults.closeIdleExecAfterMs;
    const idleTimer =
      idleLimit === null
        ? undefined
        : setInterval(
            () => {
              if (open && Date.now() - lastActivity > idleLimit) {
                open = false;
                ws.terminate();
              }
            },
            Math.max(10, Math.floor(idleLimit / 4)),
          );
    // A closed socket does not kill the command (as with a real kubelet): output is drained.
    ws.on('close', () => {
      open = false;
      clearInterval(idleTimer);
    });
    child.on('close', (code, signal) => {
      children.delete(handle);
      if (!open) return;
      if (!runtime.alive || signal) {
        // The container died under the command: the stream just ends.
        ws.terminate();
        return;
      }
      const statusBody =
        code === 0
          ? { metadata: {}, status: 'Success' }
          : {
              metadata: {},
              status: 'Failure',
              message: `command terminated with non-zero exit code: error executing command [${command.join(' ').slice(0, 80)}], exit code ${code}`,
              reason: 'NonZeroExitCode',
              details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
            };
      ws.send(frame(3, Buffer.from(JSON.stringify(statusBody))), () => ws.close(1000));
    });
  };

  // ---------------------------------------------------------------------------------------------

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    token,
    faults,
    denied,
    requests,
    createdPods,
    kubeConfig(o = {}) {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'standin', server: url, skipTLSVerify: true }],
        users: [{ name: 'standin', token: o.token ?? token }],
        contexts: [{ name: 'standin', cluster: 'standin', user: 'standin', namespace: o.namespace }],
        currentContext: 'standin',
      });
      return kc;
    },
    podNames: (ns) =>
      [...pods.keys()].filter((k) => k.startsWith(`${ns}/`)).map((k) => k.slice(ns.length + 1)),
    policyNames: (ns) =>
      [...policies.keys()].filter((k) => k.startsWith(`${ns}/`)).map((k) => k.slice(ns.length + 1)),
    async killPod(ns, name, how) {
      const entry = pods.get(key(ns, name));
      if (!entry) throw new Error(`stand-in: no pod ${ns}/${name}`);
      // The API's view changes first, then the container stops (as with a real API server and kubelet).
      if (how === 'Deleted') {
        pods.delete(key(ns, name));
        await entry.runtime?.kill();
        await rm(entry.hostDir, { recursive: true, force: true });
        return;
      }
      const containerName = String(entry.pod.spec?.containers?.[0]?.name ?? 'c');
      const now = new Date().toISOString();
      const terminated = (reason: string) => [
        {
          name: containerName,
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 137, reason, startedAt: now, finishedAt: now } },
        },
      ];
      entry.pod.status =
        how === 'Evicted'
          ? {
              phase: 'Failed',
              reason: 'Evicted',
              message: 'The node was low on resource: ephemeral-storage.',
              containerStatuses: terminated('Error'),
            }
          : { phase: 'Failed', containerStatuses: terminated('OOMKilled') };
      await entry.runtime?.kill();
    },
    nextExec(includes, timeoutMs = 10_000) {
      return new Promise<StandinExec>((resolve, reject) => {
        const waiter = {
          includes,
          resolve: (e: StandinExec) => {
            clearTimeout(timer);
            resolve(e);
          },
        };
        const timer = setTimeout(() => {
          execWaiters.splice(execWaiters.indexOf(waiter), 1);
          reject(new Error(`stand-in: no exec containing "${includes}" within ${timeoutMs} ms`));
        }, timeoutMs);
        execWaiters.push(waiter);
      });
    },
    async close() {
      for (const c of children) c.kill();
      await Promise.all([...pods.values()].map((e) => e.runtime?.kill()));
      pods.clear();
      for (const client of wss.clients) client.terminate();
      wss.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    },
  };
}
