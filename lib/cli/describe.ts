import { PasswordPolicyError } from '../users/users.js';

/** An error as the one line C-4 asks for. */
export function describe(error: unknown): string {
  if (error instanceof PasswordPolicyError) return `password refused by the policy: ${error.violations.join(', ')}`;
  if (error instanceof Error) return error.message.split('\n')[0] || 'failed';
  return String(error);
}
