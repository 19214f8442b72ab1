// Text a person typed, as our plain-text emails quote it after a label.
import { withoutDirectionControls } from '../../lib/direction-controls.ts';

/**
 * Text a person typed, quoted after a label (`Motivo: …`, `Nombre: …`): its further lines indented under
 * it, whatever breaks them (U+2028 and the like too), and without controls or direction overrides, so no
 * line of it can pass for one of ours (`Lugar: …`, another field's `Correo: …`). Input is checked for these
 * on the way in; this holds for text stored before those checks too.
 */
export function quoted(text: string): string {
  return withoutDirectionControls(text)
    .split(/\r\n|[\n\r\v\f\x85\u2028\u2029]/)
    .map((line) => line.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' '))
    .join('\n  ');
}
