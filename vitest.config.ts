import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration and end-to-end tests start real processes (bubblewrap, git, Redis clients):
    // generous timeouts, but each test still bounds its own waits.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
