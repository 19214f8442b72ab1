// The texts of the form post-action emails: the default subject and body of
// the team's notice per locale, the lines about files, and the `{{name}}`
// placeholders a form's own templates use (worker/forms/post-action-emails.ts).

/** `{{name}}` placeholders; unknown ones become empty. Plain text only: nothing is rendered as HTML. */
export function renderTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (_, key: string) => (Object.hasOwn(values, key) ? values[key] : ''));
}

export const DEFAULT_TEMPLATES = {
  es: {
    subject: 'Nuevo envío del formulario {{form}}',
    body: 'Se recibió un envío del formulario {{form}}.\n\n{{answers}}\n{{files}}',
  },
  en: {
    subject: 'New submission to the form {{form}}',
    body: 'A submission to the form {{form}} was received.\n\n{{answers}}\n{{files}}',
  },
} as const;

export const FILES_TEXT = {
  es: {
    attached: 'Archivos adjuntos:',
    notAttached: 'Estos archivos no caben en el correo (máximo 18 MB de adjuntos) y quedan solo en el administrador de archivos:',
    stored: 'Archivos guardados en el administrador de archivos:',
    received: 'Archivos recibidos:',
    notify: 'Nuevo envío del formulario',
    notStored: 'Archivos que no se guardaron:',
  },
  en: {
    attached: 'Attached files:',
    notAttached: 'These files do not fit in the email (18 MB of attachments at most) and stay only in the file manager:',
    stored: 'Files kept in the file manager:',
    received: 'Files received:',
    notify: 'New submission to the form',
    notStored: 'Files that were not kept:',
  },
} as const;
