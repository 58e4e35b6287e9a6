import { formatDate } from "./dates";

export function heading(title: string, when: Date): string {
  return `${title} (${formatDate(when)})`;
}
