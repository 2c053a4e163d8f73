import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The renderer is built once and served by the embedded server at `/` (and loaded by the Electron window).
export default defineConfig({
  root: 'renderer',
  base: './',
  plugins: [react()],
  build: {
    outDir: '../dist/renderer',
    emptyOutDir: true,
    sourcemap: true,
  },
  server: {
    proxy: {
      '/api': { target: 'http://127.0.0.1:5180', ws: true },
    },
  },
});
