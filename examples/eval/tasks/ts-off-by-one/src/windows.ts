/** Every run of `size` consecutive items, in order. */
export function windows<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length - size; i++) {
    out.push(items.slice(i, i + size));
  }
  return out;
}

/** The last item, or undefined for an empty list. */
export function last<T>(items: T[]): T | undefined {
  return items[items.length];
}
