export function parsePort(raw: string): number {
  const port = Number(raw);
  if (!Number.isInteger(port)) {
    return undefined;
  }
  return port;
}
