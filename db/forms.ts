// The stored shape of forms and submissions: the row types both the web
// process (api/forms/, which validates form files and takes submissions) and
// the worker (worker/jobs/form-post-actions.ts, which runs their post-actions)
// read. Validation schemas stay in api/forms/definition.ts; they produce
// exactly these shapes (checked there with `satisfies`).

export const LOCALES = ['es', 'en'] as const;
export type Locale = (typeof LOCALES)[number];
export const FIELD_TYPES = ['text', 'email', 'phone', 'textarea', 'number', 'date', 'select', 'checkbox', 'radio', 'file'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
export const MAPS_TO = [
  'lead.email', 'lead.name', 'lead.phone', 'lead.company_name', 'lead.job_title',
  'customer.email', 'customer.name', 'customer.phone',
] as const;
export type MapsTo = (typeof MAPS_TO)[number];
export const FILE_KINDS = ['images', 'pdf', 'documents', 'spreadsheets', 'presentations', 'videos', 'audio'] as const;
export type FileKind = (typeof FILE_KINDS)[number];

export type Translations = Partial<Record<Locale, string>>;

/** Constraints of a file field (contract: File constraints object), normalized to bytes. */
export type FileConstraints = {
  max_files: number;
  max_file_size_bytes: number;
  allowed_kinds: FileKind[];
  allowed_extensions: string[];
  allowed_content_types: string[];
};

export type StoredField = {
  key: string;
  field_type: FieldType;
  label_translations: Translations;
  placeholder_translations: Translations;
  options_translations: Partial<Record<Locale, string[]>>;
  help_text: string | null;
  required: boolean;
  maps_to: MapsTo | null;
  position: number;
  file?: FileConstraints;
};

export type EmailTemplate = { subject: string; body: string };

/** The form file's `post_actions` after defaults (DESIGN.md: form post-actions). */
export type PostActions = {
  lead?: boolean;
  customer?: boolean;
  email?: {
    enabled: boolean;
    to: string[];
    send_to_submitter: boolean;
    attach_files: boolean;
    templates: Partial<Record<Locale, EmailTemplate>>;
  };
  notify_team?: { enabled: boolean; to?: string[] };
};

export type FormRow = {
  id: string;
  company_id: string;
  name: string;
  slug: string;
  locales: Locale[];
  default_locale: Locale;
  title_translations: Translations;
  description_translations: Translations;
  active: boolean;
  fields: StoredField[];
  post_actions: PostActions;
  submissions_count: number;
  created_at: Date;
  updated_at: Date;
};

/** One stored file of a submission (contract: Form submission, `files`). */
export type SubmissionFile = {
  field_key: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  asset_id: string;
  folder_path: string;
};

export type ContactType = 'lead' | 'customer' | 'none';
export type SubmissionStatus = 'received' | 'processed' | 'failed';

/** A `form_submissions` row. Timestamps are Dates, or ISO strings when read by a list (db/timestamps.ts, ISO_TIMESTAMPS). */
export type SubmissionRow = {
  id: string;
  company_id: string;
  form_id: string;
  locale: string;
  answers: Record<string, unknown>;
  email: string | null;
  name: string | null;
  phone: string | null;
  contact_type: ContactType;
  contact_id: string | null;
  source: string;
  status: SubmissionStatus;
  files: SubmissionFile[];
  files_error: string | null;
  referrer: string | null;
  /** Each post-action and how it stands, from form_submission_actions (SUBMISSION_COLUMNS). */
  post_actions: Array<{ action: string; status: 'pending' | 'sending' | 'done' | 'failed' }>;
  created_at: Date | string;
  updated_at: Date | string;
};

/** A submission's columns and its post-actions with their states, by action name: `FROM form_submissions` unaliased. */
export const SUBMISSION_COLUMNS = `*, (SELECT coalesce(json_agg(json_build_object('action', a.action, 'status', a.status) ORDER BY a.action), '[]')
    FROM form_submission_actions a WHERE a.submission_id = form_submissions.id) AS post_actions`;
