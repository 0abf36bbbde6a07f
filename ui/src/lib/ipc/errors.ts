import type { AppError } from '$lib/bindings/AppError';
import type { ErrorCode } from '$lib/bindings/ErrorCode';
import type { Problem } from '$lib/bindings/Problem';
import type { ProblemCode } from '$lib/bindings/ProblemCode';

const ERROR_CODES: readonly ErrorCode[] = ['invalid_input', 'not_found', 'conflict', 'storage', 'cancelled', 'internal', 'policy_not_locked'];

function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
}

const PROBLEM_CODES: readonly ProblemCode[] = ['policy', 'recovery_plan', 'manifest', 'import_file'];

function isProblem(value: unknown): value is Problem {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  return (
    typeof p['path'] === 'string' &&
    (p['field'] === null || typeof p['field'] === 'string') &&
    typeof p['expected'] === 'string' &&
    typeof p['found'] === 'string' &&
    (PROBLEM_CODES as readonly unknown[]).includes(p['code'])
  );
}

function describe(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Turns whatever an IPC call rejected with into an AppError; anything not shaped like one is "internal". */
export function toAppError(reason: unknown): AppError {
  if (typeof reason === 'object' && reason !== null && 'code' in reason && 'message' in reason) {
    const { code, message } = reason;
    const problems = 'problems' in reason && Array.isArray(reason.problems) ? reason.problems.filter(isProblem) : [];
    if (isErrorCode(code) && typeof message === 'string') return problems.length > 0 ? { code, message, problems } : { code, message };
  }
  return { code: 'internal', message: describe(reason) };
}
