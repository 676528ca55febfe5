import { defineConfig } from 'vitest/config';

// Browser tests: Debian's Chromium driven by playwright-core against `vite preview` of `dist/`.
export default defineConfig({
  test: {
    include: ['tests/e2e/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
