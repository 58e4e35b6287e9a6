export async function totalSize(paths: string[], size: (path: string) => Promise<number>): Promise<number> {
  const sizes = await Promise.all(paths.map((path) => size(path)));
  return sizes.reduce((sum, n) => sum + n, 0);
}
