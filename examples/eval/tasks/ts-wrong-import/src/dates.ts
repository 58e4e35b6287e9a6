/** YYYY-MM-DD of a date, in UTC. */
export function formatIsoDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}
