import type { AppError } from '$lib/bindings/AppError';
import type { ErrorCode } from '$lib/bindings/ErrorCode';

const ERROR_CODES: readonly ErrorCode[] = ['invalid_input', 'not_found', 'conflict', 'storage', 'cancelled', 'internal', 'policy_not_locked'];

function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
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
    if (isErrorCode(code) && typeof message === 'string') return { code, message };
  }
  return { code: 'internal', message: describe(reason) };
}
