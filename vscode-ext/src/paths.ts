/**
 * Where a worker's file is on this machine. Code shipped with `runtime_env={"working_dir": ...}`
 * runs from `.../runtime_resources/working_dir_files/_ray_pkg_<hash>/` on each node; the user
 * has the same files under the workspace folder (the bridge maps paths the same way in debug
 * sessions, for `localRoot`).
 */

const RAY_PACKAGE =
  /^.*\/runtime_resources\/(?:working_dir_files|py_modules_files)\/_ray_pkg_[0-9a-f]+(?<rest>\/.*)?$/;

export function localPath(workerPath: string, localRoot: string | undefined): string {
  const found = RAY_PACKAGE.exec(workerPath);
  if (!found || !localRoot) return workerPath;
  return localRoot.replace(/[\\/]+$/, '') + (found.groups?.rest ?? '');
}
