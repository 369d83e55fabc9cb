/**
 * Who a policy or a limit names (its `subjects`): users, groups and API key ids. The policies
 * and limits pages show, edit and read them back the same way.
 */
import { list, value, type Field } from './forms.js';

/** A record's `subjects`. */
export interface Subjects {
  users?: string[];
  groups?: string[];
  apiKeys?: string[];
}

/** The subjects in words, `nobody` when there are none. */
export function subjectsText(subjects: Subjects): string {
  const parts = [
    subjects.users?.length ? `users ${subjects.users.join(', ')}` : '',
    subjects.groups?.length ? `groups ${subjects.groups.join(', ')}` : '',
    subjects.apiKeys?.length ? `API keys ${subjects.apiKeys.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : 'nobody';
}

/** The lists among `values` that hold something. */
export function nonEmpty(values: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v.length > 0));
}

const lines = (values: string[] | undefined) => (values ?? []).join('\n');

/** The form fields of the subjects, one entry a line (errors shown at `subjects.<list>`). */
export function subjectFields(subjects: Subjects): Field[] {
  return [
    {
      name: 'users',
      label: 'Users',
      type: 'textarea',
      value: lines(subjects.users),
      hint: 'User ids, one a line: an API key’s user_id or a token’s sub.',
      param: 'subjects.users',
    },
    {
      name: 'groups',
      label: 'Groups',
      type: 'textarea',
      value: lines(subjects.groups),
      hint: 'One a line.',
      param: 'subjects.groups',
    },
    {
      name: 'apiKeys',
      label: 'API key ids',
      type: 'textarea',
      value: lines(subjects.apiKeys),
      hint: 'One a line, as the API keys page lists them.',
      param: 'subjects.apiKeys',
    },
  ];
}

/** The subjects a form's {@link subjectFields} name, without the empty lists. */
export function subjectsOf(form: HTMLFormElement): Subjects {
  return nonEmpty({
    users: list(value(form, 'users'), /\n+/),
    groups: list(value(form, 'groups'), /\n+/),
    apiKeys: list(value(form, 'apiKeys'), /\n+/),
  });
}
