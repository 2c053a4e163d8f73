import {
  emailProblem,
  passwordProblem,
  usernameProblem,
  USERNAME_MAX,
  USERNAME_MIN,
} from '../../../server/protocol/schemas.js';
import type { FieldErrorMap } from '../../shared/form.js';

export const USERNAME_HINT = `${USERNAME_MIN}-${USERNAME_MAX} letters or digits, at most one underscore.`;
export { PASSWORD_HINT } from '../../shared/ui.js';

type NewAccountField = 'username' | 'email' | 'password' | 'confirm';

/** The server's own rules (server/protocol/schemas), phrased as the server phrases its field errors. */
export function newAccountProblems(values: Record<NewAccountField, string>): FieldErrorMap<NewAccountField> {
  const errors: FieldErrorMap<NewAccountField> = {};
  const username = usernameProblem(values.username);
  if (username) errors.username = values.username === '' ? 'Choose a username' : `Username ${username}`;
  const email = emailProblem(values.email);
  if (email) errors.email = values.email === '' ? 'Enter an email address' : `Email ${email}`;
  const password = passwordProblem(values.password);
  if (password) errors.password = values.password === '' ? 'Choose a password' : `Password ${password}`;
  else if (values.confirm !== values.password) errors.confirm = 'Passwords do not match';
  return errors;
}
