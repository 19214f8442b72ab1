// One error class with a closed set of codes and one code→status table. The
// error middleware renders `{error, message, errors?}` (contract, Errors);
// tRPC and MCP map the same codes to their own shapes.

export const ERROR_CODES = {
  invalid_id: { status: 400, message: 'El identificador no es un ObjectId válido.' },
  invalid_cursor: { status: 400, message: 'El cursor de paginación no corresponde a ningún registro.' },
  invalid_parameter: { status: 400, message: 'Un parámetro de la consulta no es válido.' },
  invalid_json: { status: 400, message: 'El cuerpo de la petición no es JSON válido.' },
  invalid_idempotency_key: { status: 400, message: 'La cabecera Idempotency-Key debe tener entre 1 y 255 caracteres ASCII imprimibles (sin caracteres de control ni acentos).' },
  offset_too_deep: { status: 400, message: 'El parámetro page no puede ser mayor que 200; usa starting_after.' },
  invalid_key: { status: 401, message: 'La clave de API no es válida.' },
  origin_not_allowed: { status: 403, message: 'El origen de la petición no está permitido para esta clave.' },
  insufficient_scope: { status: 403, message: 'La clave no tiene el permiso necesario para esta operación.' },
  module_not_enabled: { status: 403, message: 'El módulo no está habilitado para esta empresa.' },
  self_delete_forbidden: { status: 403, message: 'No puedes eliminar al usuario dueño de la clave de API.' },
  owner_required: { status: 403, message: 'Solo un dueño de la empresa da o quita is_owner, quita del equipo a un dueño o cambia los datos de un dueño (además de él mismo).' },
  not_found: { status: 404, message: 'El recurso no existe.' },
  method_not_allowed: { status: 405, message: 'Método no permitido para esta ruta.' },
  duplicate_reference: { status: 409, message: 'Otro registro de la empresa ya usa ese metadata.external_ref.' },
  email_taken: { status: 409, message: 'Ya existe un usuario con ese correo.' },
  conflict: { status: 409, message: 'Ya existe un registro con ese identificador.' },
  slot_unavailable: { status: 409, message: 'Ese horario ya no está disponible; elige otro.' },
  booking_cancelled: { status: 409, message: 'La reserva ya está cancelada; no se puede cancelar ni reprogramar.' },
  booking_ended: { status: 409, message: 'La reserva ya terminó; no se puede cancelar ni reprogramar desde el enlace de gestión.' },
  invoice_not_stamped: { status: 409, message: 'La factura aún no está timbrada; espera a que quede valid.' },
  payment_complement_issued: { status: 409, message: 'Este pago tiene un complemento de pago (CFDI) emitido o en timbrado; no se elimina: registra una devolución de la venta.' },
  account_in_use: { status: 409, message: 'La cuenta tiene movimientos, pagos, devoluciones o transacciones recurrentes y no se puede eliminar; archívala con archived: true.' },
  idempotency_in_progress: { status: 409, message: 'Otra petición con la misma Idempotency-Key sigue en curso.' },
  idempotency_body_too_large: { status: 413, message: 'El cuerpo supera 100 KB y no puede enviarse con Idempotency-Key.' },
  request_too_large: { status: 413, message: 'El cuerpo de la petición es demasiado grande.' },
  // Answered by the HTTP server before any middleware (middleware/request.ts answerClientError).
  invalid_request: { status: 400, message: 'La petición no es HTTP válido.' },
  request_timeout: { status: 408, message: 'La petición no llegó completa a tiempo.' },
  expectation_failed: { status: 417, message: 'La cabecera Expect solo admite 100-continue.' },
  headers_too_large: { status: 431, message: 'Las cabeceras de la petición pasan de 16 KB.' },
  unsupported_media_type: { status: 415, message: 'Tipo de contenido no soportado; usa application/json.' },
  validation_failed: { status: 422, message: 'Los datos enviados no son válidos.' },
  parameter_missing: { status: 422, message: 'Falta un parámetro obligatorio.' },
  idempotency_key_reused: { status: 422, message: 'La Idempotency-Key ya se usó con otra petición: otro método, ruta, parámetros de consulta o cuerpo, u otra credencial.' },
  not_supported_yet: { status: 422, message: 'Esta acción todavía no está soportada por la API.' },
  invalid_metadata: { status: 422, message: 'metadata no es válido.' },
  period_locked: { status: 422, message: 'El periodo contable está cerrado.' },
  already_invoiced: { status: 422, message: 'La venta ya tiene una factura vigente (pendiente de timbrar, timbrada o en cancelación).' },
  sale_without_tax: { status: 422, message: 'La venta tiene conceptos sin IVA.' },
  no_emitter: { status: 422, message: 'La empresa no tiene datos fiscales o sellos completos.' },
  customer_no_rfc: { status: 422, message: 'El cliente de la venta no tiene RFC.' },
  read_only_event: { status: 422, message: 'Este evento no se edita por la API: viene de una reserva o de Google Calendar.' },
  booking_link_inactive: { status: 422, message: 'El enlace de reserva no está activo.' },
  form_inactive: { status: 422, message: 'El formulario no está activo.' },
  invalid_user: { status: 422, message: 'El usuario no pertenece a la empresa.' },
  team_limit_reached: { status: 422, message: 'La empresa alcanzó su límite de miembros del equipo.' },
  last_owner: { status: 422, message: 'La empresa debe conservar al menos un dueño.' },
  https_required: { status: 426, message: 'Solo se aceptan peticiones HTTPS.' },
  rate_limited: { status: 429, message: 'Demasiadas peticiones; espera antes de reintentar.' },
  internal_error: { status: 500, message: 'Error interno del servidor.' },
  provider_error: { status: 502, message: 'El proveedor de facturación rechazó la petición.' },
  service_unavailable: { status: 503, message: 'El servicio no está disponible en este momento.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export type FieldErrors = Record<string, string[]>;

/**
 * Adds `message` under `name`. A field named as a member of Object.prototype
 * (`constructor`, `toString`, `__proto__`: a client's unknown key or part
 * name) is an own entry like any other: `errors[name] ??= []` found the
 * inherited member and answered 500.
 */
export function addFieldError(errors: FieldErrors, name: string, message: string): void {
  if (Object.hasOwn(errors, name)) errors[name]!.push(message);
  else Object.defineProperty(errors, name, { value: [message], enumerable: true, writable: true, configurable: true });
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly extra: Record<string, unknown>;
  /** The query parameter a 400 invalid_parameter is about (not in the body: the message names it); MCP names it in `data.errors`. */
  parameter?: string;

  constructor(code: ErrorCode, message?: string, extra: Record<string, unknown> = {}) {
    super(message ?? ERROR_CODES[code].message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.extra = extra;
  }

  toBody(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.extra };
  }
}

/** 400 invalid_parameter about one query parameter, which the message names. */
export function invalidParameter(parameter: string, message: string): ApiError {
  const error = new ApiError('invalid_parameter', message);
  error.parameter = parameter;
  return error;
}

/**
 * How many fields a 422's `errors` names at most: a body of 60,000 unknown keys would otherwise be
 * answered with megabytes. The message says how many there were.
 */
export const MAX_FIELD_ERRORS = 50;

export function validationFailed(errors: FieldErrors, message?: string): ApiError {
  const names = Object.keys(errors);
  if (names.length <= MAX_FIELD_ERRORS) return new ApiError('validation_failed', message, { errors });
  const shown: FieldErrors = {};
  for (const name of names.slice(0, MAX_FIELD_ERRORS)) for (const text of errors[name]!) addFieldError(shown, name, text);
  const base = message ?? ERROR_CODES.validation_failed.message;
  return new ApiError('validation_failed', `${base} Se muestran ${MAX_FIELD_ERRORS} de los ${names.length} campos con errores.`, { errors: shown });
}
