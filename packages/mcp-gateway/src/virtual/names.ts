import { PatternSet } from '@gw/access';
import type { ResolvedMember } from './config';

/** Where a public name leads: the member's server and the member's own name. */
export interface MemberTarget {
  /** The member's server slug. */
  server: string;
  /** The name as the member knows it. */
  name: string;
}

/**
 * The names of one member as clients of the virtual server see them (CONTRACT section 16): a tool
 * the member offers (its `tools` patterns, every tool without them) is named by its `rename`
 * value as it is, else `prefix + name`; a prompt is `prefix + name` (`tools` and `rename` apply
 * to tools only).
 */
export class MemberNames {
  readonly server: string;
  readonly prefix: string;
  private readonly patterns: PatternSet | undefined;
  private readonly rename: ReadonlyMap<string, string>;
  /** Public name → own name, for the renamed tools. */
  private readonly renamedFrom: ReadonlyMap<string, string>;

  constructor(member: ResolvedMember) {
    this.server = member.server;
    this.prefix = member.prefix;
    this.patterns = member.tools === undefined ? undefined : new PatternSet(member.tools, `${member.server}.tools`);
    this.rename = member.rename;
    this.renamedFrom = new Map([...member.rename].map(([own, renamed]) => [renamed, own]));
  }

  /** Whether the member's tool `name` is offered (its `tools` patterns). */
  offers(name: string): boolean {
    return this.patterns === undefined || this.patterns.matches(name);
  }

  /** The public name of the member's tool `name`, or undefined when the member does not offer it. */
  publicToolName(name: string): string | undefined {
    if (!this.offers(name)) return undefined;
    return this.rename.get(name) ?? this.prefix + name;
  }

  /**
   * The member's own tool name behind `publicName`, from the name alone (no list needed): a
   * `rename` value, or a name that carries the member's prefix, whose rest the member offers and
   * does not rename. Undefined when the name is not one of this member's: for a member without a
   * prefix, only its renames are recognised this way.
   */
  ownToolName(publicName: string): string | undefined {
    const renamed = this.renamedFrom.get(publicName);
    if (renamed !== undefined) return renamed;
    if (this.prefix === '' || !publicName.startsWith(this.prefix)) return undefined;
    const own = publicName.slice(this.prefix.length);
    if (own === '' || this.rename.has(own) || !this.offers(own)) return undefined;
    return own;
  }

  /** The public name of the member's prompt `name`. */
  publicPromptName(name: string): string {
    return this.prefix + name;
  }

  /** The member's own prompt name behind `publicName`, when it carries the member's (non-empty) prefix. */
  ownPromptName(publicName: string): string | undefined {
    if (this.prefix === '' || !publicName.startsWith(this.prefix)) return undefined;
    const own = publicName.slice(this.prefix.length);
    return own === '' ? undefined : own;
  }
}
