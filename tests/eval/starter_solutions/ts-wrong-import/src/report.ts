import { formatIsoDate } from "./dates";

export function heading(title: string, when: Date): string {
  return `${title} (${formatIsoDate(when)})`;
}
