export async function totalSize(paths: string[], size: (path: string) => Promise<number>): Promise<number> {
  let total = 0;
  paths.forEach(async (path) => {
    total += await size(path);
  });
  return total;
}
