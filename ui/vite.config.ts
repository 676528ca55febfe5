import { defineConfig } from 'vitest/config';

// The Tauri shell loads `ui/dist` (tauri.conf.json `frontendDist: ../ui/dist`).
export default defineConfig({
  base: './',
  clearScreen: false,
  build: {
    outDir: 'dist',
    target: 'es2021',
    // One small bundle; no inline scripts so the app's strict CSP holds.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
  server: { host: '127.0.0.1', port: 1420, strictPort: true },
  test: {
    include: ['tests/unit/**/*.test.ts'],
    environment: 'node',
  },
});
