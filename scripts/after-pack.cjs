// electron-builder `afterPack` hook: flips Electron's fuses in the packaged executable before it is signed.
// RunAsNode off (ELECTRON_RUN_AS_NODE cannot turn the app into a plain Node), cookies encrypted at rest, no
// NODE_OPTIONS and no --inspect (nobody injects code through the environment or a debugger flag), and the app
// loads only from its ASAR archive, whose integrity is checked at start (macOS and Windows, where Electron supports
// it). The host's utility process needs none of these: it is started through utilityProcess, not RunAsNode.
const { join } = require('node:path');
const { flipFuses, FuseV1Options, FuseVersion } = require('@electron/fuses');

/** The fuses for a platform (exported for the test). */
function fuseConfig(platform, arch) {
  const asarIntegrity = platform === 'darwin' || platform === 'win32';
  return {
    version: FuseVersion.V1,
    // Flipping fuses invalidates an ad-hoc signature; arm64 macOS refuses to run unsigned code.
    resetAdHocDarwinSignature: platform === 'darwin' && arch === 'arm64',
    [FuseV1Options.RunAsNode]: false,
    [FuseV1Options.EnableCookieEncryption]: true,
    [FuseV1Options.EnableNodeOptionsEnvironmentVariable]: false,
    [FuseV1Options.EnableNodeCliInspectArguments]: false,
    [FuseV1Options.EnableEmbeddedAsarIntegrityValidation]: asarIntegrity,
    [FuseV1Options.OnlyLoadAppFromAsar]: true,
  };
}

/** Where electron-builder put the Electron executable for this platform. */
function executablePath(context) {
  const { appOutDir, electronPlatformName, packager } = context;
  const product = packager.appInfo.productFilename;
  if (electronPlatformName === 'darwin' || electronPlatformName === 'mas')
    return join(appOutDir, `${product}.app`);
  if (electronPlatformName === 'win32') return join(appOutDir, `${product}.exe`);
  return join(appOutDir, packager.executableName);
}

// electron-builder's Arch enum: 0 ia32, 1 x64, 2 armv7l, 3 arm64, 4 universal.
const ARCH_NAMES = ['ia32', 'x64', 'armv7l', 'arm64', 'universal'];

async function afterPack(context) {
  const arch = ARCH_NAMES[context.arch] ?? String(context.arch);
  await flipFuses(executablePath(context), fuseConfig(context.electronPlatformName, arch));
}

module.exports = afterPack;
module.exports.default = afterPack;
module.exports.fuseConfig = fuseConfig;
module.exports.executablePath = executablePath;
