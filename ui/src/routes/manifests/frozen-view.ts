// What the read-only view of a frozen manifest shows: the fields that are set, grouped as the
// form groups them. Presentation only: the values are shown as frozen, nothing is judged here.
import { isObject, type JsonObject, type Section } from '$lib/schema-form';

export type SetField = { name: string; description?: string; value: unknown };
export type SetSection = { title: string; fields: SetField[] };

/** A value is set unless it is absent or null; an empty list or object is set (it says "none"). */
export function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** The sections with their set fields (empty sections dropped), and the names left unset. */
export function setFields(doc: JsonObject, sections: readonly Section[]): { sections: SetSection[]; unset: string[] } {
  const unset: string[] = [];
  const known = new Set<string>();
  const out: SetSection[] = [];
  for (const section of sections) {
    const fields: SetField[] = [];
    for (const field of section.fields) {
      known.add(field.name);
      if (isSet(doc[field.name])) fields.push({ name: field.name, description: field.description, value: doc[field.name] });
      else unset.push(field.name);
    }
    if (fields.length > 0) out.push({ title: section.title, fields });
  }
  // A key the schema does not know still shows: nothing frozen is hidden.
  const extra = Object.keys(doc).filter((k) => !known.has(k) && isSet(doc[k]));
  if (extra.length > 0) out.push({ title: 'Other fields', fields: extra.map((name) => ({ name, value: doc[name] })) });
  return { sections: out, unset };
}

/** The entries of a nested object that are set, in their stored order. */
export function setEntries(value: JsonObject): [string, unknown][] {
  return Object.entries(value).filter(([, v]) => isSet(v));
}

/** A list of scalars in one line; `null` when an item is an object or a list (shown nested). */
export function scalarList(value: unknown[]): string | null {
  if (value.some((v) => isObject(v) || Array.isArray(v))) return null;
  return value.map((v) => scalarText(v)).join(', ');
}

/** A scalar as frozen: text as is, numbers with every digit, booleans in words. */
export function scalarText(value: unknown): string {
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** Digests and other long unbroken tokens read better in monospace and may wrap anywhere. */
export function isToken(value: unknown): boolean {
  return typeof value === 'string' && /^[\w.:+/=-]{24,}$/.test(value);
}
