// Bundles the extension (src/extension.ts and vscode-languageclient) into dist/extension.js.
//   node scripts/build.mjs               development build (source maps)
//   node scripts/build.mjs --production  minified, no source maps (vsce package uses this)
//   node scripts/build.mjs --watch       rebuild on change
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

/** @type {import('esbuild').BuildOptions} */
const options = {
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode'],
  sourcemap: !production,
  minify: production,
  logLevel: 'info',
};

if (watch) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
}
