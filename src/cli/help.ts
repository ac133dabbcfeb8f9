// What `--help` prints, in one shape for every command: the synopsis, a sentence saying what the
// command does, and examples that run as written. A command added to a table brings its own.

/** A command's help, printed by `--help`/`-h` and repeated after a usage mistake. */
export interface Usage {
  /** The synopsis, starting `keygate …`; a continuation line is indented. */
  usage: string;
  /** One sentence: what the command does. */
  about?: string;
  /** Command lines, each runnable as written. */
  examples?: readonly string[];
  /** Its subcommands, when it has some: each answers `--help` with its own help. */
  subcommands?: Record<string, Usage>;
}

/** The synopsis alone, prefixed `usage:`. */
const synopsisOf = (u: Usage): string => (u.usage.startsWith('usage:') ? u.usage : `usage: ${u.usage}`);

/** The full help of one command or subcommand. */
export function helpOf(u: Usage): string {
  const parts = [synopsisOf(u)];
  if (u.about) parts.push(u.about);
  if (u.examples?.length) parts.push(`example${u.examples.length > 1 ? 's' : ''}:\n${u.examples.map((e) => `  ${e}`).join('\n')}`);
  if (u.subcommands) parts.push(`subcommands:\n${listOf(u.subcommands)}`);
  return parts.join('\n\n');
}

/** One line per command: its synopsis's first line and, where the command has one, its sentence. */
export function listOf(table: Record<string, Usage>): string {
  return Object.values(table).map((u) => `  ${u.usage.split('\n')[0]}${u.about ? `\n      ${u.about}` : ''}`).join('\n');
}
