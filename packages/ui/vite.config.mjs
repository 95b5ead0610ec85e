import { defineConfig } from 'vite';

// Served by the API server under /ui/; hashed names under assets/ are what it caches for a year.
export default defineConfig({
  base: '/ui/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // The CSP forbids inline script and style, so nothing may be inlined as a data: module.
    assetsInlineLimit: 0,
    // The server's CSP allows no inline script; the polyfill is for browsers we do not target.
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
