/** Cells a spreadsheet would read as a formula start with one of these (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** One CSV cell: quoted, quotes doubled, and a leading formula character defused with a `'` prefix. */
export function csvCell(value: unknown): string {
  const text = value === undefined || value === null ? '' : String(value);
  const safe = FORMULA_START.test(text) ? `'${text}` : text;
  return `"${safe.replaceAll('"', '""')}"`;
}

export function csvLine(values: readonly unknown[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}

/** Undoes csvCell's defusing prefix (a `'` before a formula character), for files we exported. */
export function undefuse(cell: string): string {
  return cell.length > 1 && cell.startsWith("'") && FORMULA_START.test(cell.slice(1)) ? cell.slice(1) : cell;
}

/**
 * Parses CSV (RFC 4180: quoted cells may hold commas, quotes doubled, line breaks) into rows, each with the file
 * line it starts on. Returns the line of the first malformed row instead when there is one.
 */
export function parseCsv(
  text: string,
  maxRows: number,
): { rows: Array<{ line: number; cells: string[] }> } | { problem: string; line: number } {
  const rows: Array<{ line: number; cells: string[] }> = [];
  let cells: string[] = [];
  let cell = '';
  let quoted = false;
  let line = 1;
  let rowLine = 1;
  let afterQuote = false;
  const endRow = (): void => {
    cells.push(cell);
    if (!(cells.length === 1 && cells[0] === '')) rows.push({ line: rowLine, cells });
    cells = [];
    cell = '';
    afterQuote = false;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
        afterQuote = true;
      } else {
        if (c === '\n') line++;
        cell += c;
      }
      continue;
    }
    if (c === '"' && cell === '' && !afterQuote) quoted = true;
    else if (c === ',') {
      cells.push(cell);
      cell = '';
      afterQuote = false;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRow();
      if (rows.length > maxRows) return { problem: `more than ${maxRows} lines`, line };
      line++;
      rowLine = line;
    } else if (afterQuote) return { problem: 'text after a closing quote', line };
    else if (c === '"') return { problem: 'a quote inside an unquoted cell', line };
    else cell += c;
  }
  if (quoted) return { problem: 'a quoted cell is never closed', line: rowLine };
  endRow();
  if (rows.length > maxRows) return { problem: `more than ${maxRows} lines`, line };
  return { rows };
}
