import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { apiErrorInfo, classifyPodStartup, podDeath } from '../../../../src/sandbox/kubernetes/pod-status.js';

const pod = (status: V1Pod['status'], metadata: V1Pod['metadata'] = { name: 'p' }): V1Pod => ({
  metadata,
  status,
});
const waiting = (reason: string, message?: string): V1Pod['status'] => ({
  phase: 'Pending',
  containerStatuses: [
    {
      name: 'sandbox',
      image: 'i',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { waiting: { reason, message } },
    },
  ],
});

describe('classifyPodStartup', () => {
  it('is running only when the phase and the container say so', () => {
    const running: V1Pod['status'] = {
      phase: 'Running',
      containerStatuses: [
        { name: 'sandbox', image: 'i', imageID: '', ready: true, restartCount: 0, state: { running: {} } },
      ],
    };
    expect(classifyPodStartup(pod(running), 'img')).toEqual({ state: 'running' });
    expect(classifyPodStartup(pod({ phase: 'Running' }), 'img').state).toBe('pending');
  });

  it('fails at once on image pull errors, not retryable, naming the image', () => {
    for (const reason of ['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName']) {
      const r = classifyPodStartup(pod(waiting(reason, 'manifest unknown')), 'reg/img:1');
      expect(r.state).toBe('failed');
      if (r.state !== 'failed') continue;
      expect(r.error.code).toBe('SANDBOX_UNAVAILABLE');
      expect(r.error.retryable).toBe(false);
      expect(r.error.message).toContain(
        `the sandbox image "reg/img:1" cannot be pulled (${reason}: manifest unknown)`,
      );
    }
  });

  it('fails on an unschedulable pod, retryable, with the scheduler message', () => {
    const r = classifyPodStartup(
      pod({
        phase: 'Pending',
        conditions: [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message: '0/2 nodes are available',
          },
        ],
      }),
      'img',
    );
    expect(
      r.state === 'failed' && [r.error.retryable, r.error.message.includes('0/2 nodes are available')],
    ).toEqual([true, true]);
  });

  it('fails on container creation errors and on a pod that already ended', () => {
    expect(classifyPodStartup(pod(waiting('CreateContainerConfigError', 'bad')), 'img').state).toBe('failed');
    const ended = classifyPodStartup(
      pod({
        phase: 'Failed',
        containerStatuses: [
          {
            name: 's',
            image: 'i',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 127, reason: 'Error' } },
          },
        ],
      }),
      'img',
    );
    expect(ended.state === 'failed' && ended.error.message).toContain('ended before it was ready (Error');
  });

  it('stays pending while creating, with a detail for the timeout message', () => {
    expect(classifyPodStartup(pod(waiting('ContainerCreating')), 'img')).toEqual({
      state: 'pending',
      detail: 'Pending, ContainerCreating',
    });
    expect(classifyPodStartup(pod(undefined), 'img')).toEqual({ state: 'pending', detail: 'Pending' });
  });
});

describe('podDeath', () => {
  it('names deleted, evicted, OOMKilled and deadline deaths; null while running', () => {
    expect(podDeath(null)?.reason).toBe('Deleted');
    expect(podDeath(pod({ phase: 'Running' }, { name: 'p', deletionTimestamp: new Date() }))?.reason).toBe(
      'Deleted',
    );
    expect(
      podDeath(pod({ phase: 'Failed', reason: 'Evicted', message: 'low on ephemeral-storage' })),
    ).toEqual({
      reason: 'Evicted',
      message: 'low on ephemeral-storage',
    });
    expect(podDeath(pod({ phase: 'Failed', reason: 'DeadlineExceeded' }))?.reason).toBe('DeadlineExceeded');
    expect(
      podDeath(
        pod({
          phase: 'Failed',
          containerStatuses: [
            {
              name: 's',
              image: 'i',
              imageID: '',
              ready: false,
              restartCount: 0,
              state: { terminated: { exitCode: 137, reason: 'OOMKilled' } },
            },
          ],
        }),
      )?.reason,
    ).toBe('OOMKilled');
    expect(podDeath(pod({ phase: 'Running' }))).toBeNull();
  });
});

describe('apiErrorInfo', () => {
  it('reads the status and message of a client-node ApiException body', () => {
    const err = Object.assign(new Error('HTTP-Code: 403'), {
      code: 403,
      body: JSON.stringify({ kind: 'Status', reason: 'Forbidden', message: 'exceeded quota: sandboxes' }),
    });
    expect(apiErrorInfo(err)).toEqual({
      status: 403,
      reason: 'Forbidden',
      message: 'exceeded quota: sandboxes',
    });
    expect(apiErrorInfo(new Error('ECONNREFUSED'))).toEqual({
      status: undefined,
      reason: undefined,
      message: 'ECONNREFUSED',
    });
  });
});
