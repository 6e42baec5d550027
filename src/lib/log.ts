import { pino, type Logger, type LevelWithSilent, type DestinationStream } from 'pino';
import { MeshError } from './errors.js';

export type LogFormat = 'text' | 'json';
export type { Logger };

/** LOG_FORMAT, as every amesh component reads it: `text` when unset or empty, else `text` or `json` in any case. */
export function parseLogFormat(env: Readonly<Record<string, string | undefined>>): LogFormat {
  const format = (env['LOG_FORMAT'] || 'text').toLowerCase();
  if (format !== 'text' && format !== 'json')
    throw new MeshError('AMESH_ERR_CONFIG', `LOG_FORMAT: "${format}" must be text or json`);
  return format;
}

const LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/**
 * Text lines in ztunnel's layout: `<time>\t<level>\t<scope>\t<message>\tk=v k=v`. Access logs are per
 * connection, not per chunk, so formatting from pino's JSON line is affordable.
 */
const str = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
/** A `k=v` value: strings bare unless they hold a space, a quote or `=`, then quoted as JSON; the rest as JSON. */
const kvValue = (v: unknown): string => (typeof v !== 'string' || /[\s"=]/.test(v) ? (JSON.stringify(v) ?? '') : v);

function textDestination(out: NodeJS.WritableStream): DestinationStream {
  return {
    write(line: string): void {
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line) as Record<string, unknown>;
      } catch {
        out.write(line);
        return;
      }
      const { time, level, scope, message, ...rest } = o;
      let s = `${str(time)}\t${str(level)}\t${str(scope)}\t${str(message)}`;
      const kv: string[] = [];
      for (const [k, v] of Object.entries(rest)) {
        kv.push(`${k}=${kvValue(v)}`);
      }
      if (kv.length > 0) s += `\t${kv.join(' ')}`;
      out.write(s + '\n');
    },
  };
}

/**
 * A component's logging: one pino root, child loggers per `scope`, and runtime level changes in
 * ztunnel's `/logging?level=` syntax (`info`, or `access=debug,proxy=warn`).
 */
export class LogControl {
  readonly root: Logger;
  private readonly scopes = new Map<string, Logger>();
  private readonly overrides = new Map<string, LevelWithSilent>();
  private defaultLevel: LevelWithSilent;

  /**
   * `level` is a spec as `apply` takes it: `info`, or `info,xds=debug` (RUST_LOG, --log-level). `tap`, when given,
   * sees every entry written, as an object, after it is written.
   */
  constructor(opts: {
    format: LogFormat;
    level: string;
    component: string;
    out?: NodeJS.WritableStream;
    tap?: (entry: Record<string, unknown>) => void;
  }) {
    const { def, per } = LogControl.parseSpec(opts.level);
    this.defaultLevel = def ?? 'info';
    for (const [k, v] of per) this.overrides.set(k, v);
    const out = opts.out ?? process.stdout;
    const written = opts.format === 'json' ? (out as unknown as DestinationStream) : textDestination(out);
    const { tap } = opts;
    const dest: DestinationStream =
      tap === undefined
        ? written
        : {
            write(line: string): void {
              written.write(line);
              tap(JSON.parse(line) as Record<string, unknown>);
            },
          };
    this.root = pino(
      {
        level: 'trace',
        base: { component: opts.component },
        messageKey: 'message',
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      dest,
    );
    if (opts.format === 'text') this.root.setBindings({ component: undefined });
  }

  static checkLevel(l: string): LevelWithSilent {
    // `off` is how RUST_LOG says silent.
    const v = (l.toLowerCase() === 'off' ? 'silent' : l.toLowerCase()) as LevelWithSilent;
    if (!LEVELS.includes(v)) {
      throw new MeshError('AMESH_ERR_CONFIG', `unknown log level "${l}" (use one of ${LEVELS.join(', ')})`);
    }
    return v;
  }

  /** The logger for one module; its level follows the default unless overridden for this scope. */
  scope(name: string): Logger {
    let l = this.scopes.get(name);
    if (l === undefined) {
      l = this.root.child({ scope: name });
      l.level = this.levelOf(name);
      this.scopes.set(name, l);
    }
    return l;
  }

  /** The most specific override whose target is the scope or a `::` parent of it, else the default. */
  private levelOf(scope: string): LevelWithSilent {
    let best: [string, LevelWithSilent] | undefined;
    for (const [target, level] of this.overrides) {
      if (
        (scope === target || scope.startsWith(`${target}::`)) &&
        (best === undefined || target.length > best[0].length)
      )
        best = [target, level];
    }
    return best?.[1] ?? this.defaultLevel;
  }

  /**
   * Parses `info`, `scope=level,scope=level` or both (`info,xds=debug`), as RUST_LOG and ztunnel's
   * `/logging?level=` take them. A target may be written as ztunnel's module path (`ztunnel::xds=debug` is scope
   * `xds`). Throws on an unknown level or an empty target.
   */
  static parseSpec(spec: string): { def: LevelWithSilent | undefined; per: [string, LevelWithSilent][] } {
    let def: LevelWithSilent | undefined;
    const per: [string, LevelWithSilent][] = [];
    for (const part of spec
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')) {
      const eq = part.indexOf('=');
      if (eq < 0) {
        def = LogControl.checkLevel(part);
        continue;
      }
      const target = part
        .slice(0, eq)
        .trim()
        .replace(/^ztunnel::/, '');
      if (target === '')
        throw new MeshError('AMESH_ERR_CONFIG', `log level "${part}" names no scope (use scope=level, e.g. xds=debug)`);
      per.push([target, LogControl.checkLevel(part.slice(eq + 1).trim())]);
    }
    return { def, per };
  }

  /** Applies a level spec (see `parseSpec`). Throws on bad input, changing nothing. */
  apply(spec: string): void {
    const { def, per } = LogControl.parseSpec(spec);
    if (def !== undefined) {
      this.defaultLevel = def;
      this.overrides.clear();
    }
    for (const [k, v] of per) this.overrides.set(k, v);
    for (const [name, l] of this.scopes) l.level = this.levelOf(name);
  }

  reset(initial: string): void {
    this.overrides.clear();
    this.apply(initial);
  }

  /** Current levels, in the form `/logging` prints. */
  describe(): string {
    const lines = [`current log level is ${this.defaultLevel}`];
    for (const [k, v] of [...this.overrides].sort()) lines.push(`${k}=${v}`);
    return lines.join('\n') + '\n';
  }
}
