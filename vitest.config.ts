import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real-cluster suite runs with `npm run test:k8s` (vitest.k8s.config.ts) when KUBECONFIG is set.
    exclude: ['test/k8s/**', 'node_modules/**', 'dist/**'],
    // Integration and end-to-end tests start real processes (bubblewrap, git, Redis clients):
    // generous timeouts, but each test still bounds its own waits.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
