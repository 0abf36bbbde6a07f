// What every field of a schema form needs besides its own value.

export type FieldProblem = { path: string; expected: string; found: string };

export type FormContext = {
  /** Every problem the backend reported; each field picks those at its path. */
  problems: readonly FieldProblem[];
  /** Suggested values by field path (an `<input list>`), e.g. the engine's KV dtypes. */
  suggestions: Readonly<Record<string, readonly string[]>>;
  /** Paths of text fields that take several lines. */
  multiline: readonly string[];
};

/** What a text input holds: a value (`undefined` = absent), or `null` while it is not one yet. */
export type Parsed = { value: unknown } | null;
