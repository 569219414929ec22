/**
 * ## JSON → XML mapping (N-9, N-10, N-11)
 *
 * `toXml(value, options)` turns any JSON-compatible value into one well-formed XML 1.0 document,
 * with no whitespace added between elements:
 *
 * | JSON                     | XML                                                              |
 * |--------------------------|------------------------------------------------------------------|
 * | object                   | one child element per key, in key order (`Object.keys`)          |
 * | array                    | one `<item>` child per entry (`itemName`; problem documents: `<i>`); a member named in `unwrap` has no wrapper: one element per entry in its place |
 * | string                   | its text, escaped                                                |
 * | number, boolean          | their JSON text (`422`, `1.5e-7`, `true`)                        |
 * | null, NaN, ±Infinity     | an empty element with `xsi:nil="true"`                           |
 * | empty string/object/array| an empty element, `<name/>`                                      |
 *
 * As with `JSON.stringify`: `toJSON()` is honoured (a `Date` becomes its ISO string), members
 * that are `undefined`, functions or symbols are left out (in arrays they become nil entries),
 * a `bigint` or a cycle is a `TypeError`, and so is a document that is itself `undefined`, a
 * function or a symbol (where `JSON.stringify` returns `undefined`). Depth is limited by memory only.
 *
 * ```
 * toXml({ param1: 'a&b', list: [1, null] }, { root: 'something' })
 * <?xml version="1.0" encoding="UTF-8"?><something xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
 *   <param1>a&amp;b</param1><list><item>1</item><item xsi:nil="true"/></list></something>   (one line)
 * ```
 *
 * `xmlns:xsi` is declared on the root only when some nil occurs; `namespace` adds `xmlns="…"`.
 *
 * **Text** (N-10): `&`, `<`, `>` become entities; CR becomes `&#13;` (a parser turns a raw CR or
 * CRLF into LF, XML 1.0 §2.11); characters XML 1.0 cannot carry (U+0000–U+0008, U+000B, U+000C,
 * U+000E–U+001F, lone surrogates, U+FFFE, U+FFFF) become U+FFFD. Tab and LF stay as they are.
 *
 * **Keys → element names** (lossless, deterministic, `encodeXmlName` / `decodeXmlName`), in the
 * style of SQL/XML (ISO 9075-14) and .NET `XmlConvert.EncodeName`:
 * - a character that cannot stand at its place in an NCName (XML 1.0 5th ed. §2.3, no colons)
 *   becomes `_xHHHH_` (4 upper-case hex digits), or `_xHHHHHH_` (6) above U+FFFF;
 *   a lone surrogate becomes the escape of its code unit (`_xD800_`);
 * - a `_` followed by `x` is always escaped (`_x005F_x…`), so every `_x` in a name starts an escape;
 * - a key starting with `xml` in any case (reserved, XML 1.0 §2.3) gets its first letter escaped;
 * - the empty key becomes `_x_`, which no other key can produce.
 *
 * Examples: `param1` → `param1`, `1st` → `_x0031_st`, `a b` → `a_x0020_b`, `a:b` → `a_x003A_b`,
 * `xmlns` → `_x0078_mlns`, `_x1` → `_x005F_x1`, `""` → `_x_`.
 */

import { createMemo } from '../memo.js';
import { encodeName, isNCName } from './xml-name.js';
import { argumentError } from '../validate.js';

export { encodeXmlName, decodeXmlName } from './xml-name.js';

const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';
const REPLACEMENT = '\uFFFD';
const KNOWN_OPTIONS: { readonly [K in keyof XmlOptions]-?: true } = {
  root: true,
  itemName: true,
  namespace: true,
  declaration: true,
  unwrap: true,
};

export interface XmlOptions {
  /** Root element name; must be an NCName (an XML name without a colon). @default 'root' */
  readonly root?: string;
  /** Element name for array entries; must be an NCName. RFC 9457 problem documents use 'i'. @default 'item' */
  readonly itemName?: string;
  /** Default namespace declared on the root (`xmlns="…"`), e.g. 'urn:ietf:rfc:7807'. */
  readonly namespace?: string;
  /** Emit `<?xml version="1.0" encoding="UTF-8"?>` first. @default true */
  readonly declaration?: boolean;
  /**
   * Array members written without their wrapper, one element per entry in the member's place:
   * `{ users: 'user' }` writes `{"users": [a, b], "next": n}` as `<user>a</user><user>b</user><next>n</next>`
   * (R-3's page of users). Keys are member names as in the JSON; values must be NCNames. @default {}
   */
  readonly unwrap?: Readonly<Record<string, string>>;
}

/** An element name's markup, made once per name: each element then costs two concatenations. */
interface Tag {
  readonly open: string; // <name>
  readonly close: string; // </name>
  readonly empty: string; // <name/>
  readonly nil: string; // <name xsi:nil="true"/>
}

function makeTag(name: string): Tag {
  return { open: '<' + name + '>', close: '</' + name + '>', empty: '<' + name + '/>', nil: '<' + name + ' xsi:nil="true"/>' };
}

/** Keys repeat (every entry of an array of records has the same ones): their tags are remembered. */
const tagOfKey = createMemo((key) => makeTag(encodeName(key)), { size: 1024, maxKeyLength: 64 });
/** Array entries' tags, by item name (already a valid name: not encoded). */
const tagOfItem = createMemo(makeTag, { size: 16, maxKeyLength: 64 });

/** A container being walked; the explicit stack keeps deep nesting off the call stack. */
interface Frame {
  readonly tag: Tag | undefined; // undefined for the root, whose tags are written last
  readonly container: Record<string, unknown> | readonly unknown[];
  readonly keys: readonly string[] | undefined; // undefined for arrays
  readonly length: number;
  /** Arrays: the element of each entry. */
  readonly item: Tag;
  index: number;
  opened: boolean;
}

/** Serialize a JSON-compatible value as an XML 1.0 document (see the mapping above). */
export function toXml(value: unknown, options: XmlOptions = {}): string {
  const { root, itemName, namespace, declaration, unwrap } = resolveOptions(options);
  const itemTag = tagOfItem(itemName);
  const top = toJsonValue(value, '');
  const stack: Frame[] = [];
  let ancestors: Set<object> | undefined; // only for deep trees; shallow ones scan the stack
  let body = '';
  let nil = top === null;

  switch (typeof top) {
    case 'object':
      if (top !== null) stack.push(newFrame(top, undefined, itemTag));
      break;
    case 'string':
      body = escapeText(top);
      break;
    case 'number':
      if (Number.isFinite(top)) body = String(top);
      else nil = true;
      break;
    case 'boolean':
      body = top ? 'true' : 'false';
      break;
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    default:
      throw new TypeError(`toXml cannot serialize ${typeof top} as a document`);
  }
  const rootIsNil = nil;

  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.index >= frame.length) {
      stack.pop();
      ancestors?.delete(frame.container);
      if (frame.tag !== undefined) body += frame.opened ? frame.tag.close : frame.tag.empty;
      continue;
    }
    const index = frame.index++;
    let tag: Tag;
    let child: unknown;
    if (frame.keys === undefined) {
      tag = frame.item;
      child = toJsonValue((frame.container as readonly unknown[])[index], index);
    } else {
      const key = frame.keys[index]!;
      tag = tagOfKey(key);
      child = toJsonValue((frame.container as Record<string, unknown>)[key], key);
    }

    let element: string;
    switch (typeof child) {
      case 'string':
        element = child === '' ? tag.empty : tag.open + escapeText(child) + tag.close;
        break;
      case 'number':
        if (Number.isFinite(child)) {
          element = tag.open + String(child) + tag.close;
        } else {
          element = tag.nil;
          nil = true;
        }
        break;
      case 'boolean':
        element = tag.open + (child ? 'true' : 'false') + tag.close;
        break;
      case 'object':
        if (child === null) {
          element = tag.nil;
          nil = true;
          break;
        }
        // JSON.stringify's cycle check: the value must not be one of its own ancestors.
        if (ancestors === undefined) {
          for (let i = 0; i < stack.length; i++) if (stack[i]!.container === child) throw circular();
          if (stack.length >= 32) ancestors = new Set(stack.map((f) => f.container));
        } else if (ancestors.has(child)) {
          throw circular();
        }
        ancestors?.add(child);
        if (!frame.opened) {
          frame.opened = true;
          body += (frame.tag as Tag).open;
        }
        // An unwrapped array member (the `unwrap` option) has no element of its own: its entries go
        // straight into the parent, each under the given name.
        if (unwrap !== undefined && frame.keys !== undefined && Array.isArray(child) && Object.hasOwn(unwrap, frame.keys[index]!)) {
          stack.push(newFrame(child, undefined, tagOfItem(unwrap[frame.keys[index]!]!)));
        } else {
          stack.push(newFrame(child, tag, itemTag));
        }
        continue;
      case 'bigint':
        throw new TypeError('Do not know how to serialize a BigInt');
      default:
        // undefined, function, symbol: JSON.stringify drops the member, or writes null in an array.
        if (frame.keys !== undefined) continue;
        element = tag.nil;
        nil = true;
    }
    if (!frame.opened) {
      frame.opened = true;
      body += (frame.tag as Tag).open;
    }
    body += element;
  }

  let start = namespace === undefined ? '<' + root : '<' + root + ' xmlns="' + escapeAttribute(namespace) + '"';
  if (nil) start += ' xmlns:xsi="' + XSI_NS + '"';
  if (rootIsNil) start += ' xsi:nil="true"';
  const document = body === '' ? start + '/>' : start + '>' + body + '</' + root + '>';
  return declaration ? DECLARATION + document : document;
}

function newFrame(container: object, tag: Tag | undefined, item: Tag): Frame {
  const keys = Array.isArray(container) ? undefined : Object.keys(container);
  return {
    tag,
    container: container as Frame['container'],
    keys,
    length: keys === undefined ? (container as readonly unknown[]).length : keys.length,
    item,
    index: 0,
    opened: tag === undefined, // the root's own tags are written last; an unwrapped array has none
  };
}

function circular(): TypeError {
  return new TypeError('Converting circular structure to XML');
}

/** JSON.stringify's SerializeJSONProperty steps before the type switch: toJSON, then unboxing. */
function toJsonValue(value: unknown, key: string | number): unknown {
  if ((typeof value === 'object' && value !== null) || typeof value === 'bigint') {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, String(key)) as unknown;
    if (typeof value === 'object' && value !== null) {
      if (value instanceof Number) return Number(value);
      if (value instanceof String) return String(value);
      if (value instanceof Boolean) return value.valueOf();
      if (value instanceof BigInt) return value.valueOf();
    }
  }
  return value;
}

type ResolvedOptions = Required<Omit<XmlOptions, 'namespace' | 'unwrap'>> & Pick<XmlOptions, 'namespace' | 'unwrap'>;

function resolveOptions(options: XmlOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw argumentError('toXml options must be an object');
  let count = 0;
  for (const key in options) {
    if (!Object.hasOwn(KNOWN_OPTIONS, key)) throw argumentError(`unknown toXml option "${key}"`);
    count++;
  }
  // `{ root }` alone, what the representation handler passes on every request: checked once per root.
  const root = options.root;
  if (count === 1 && typeof root === 'string') {
    let resolved = ROOT_ONLY.get(root);
    if (resolved === undefined) {
      resolved = checkOptions(options);
      if (ROOT_ONLY.size < ROOT_ONLY_LIMIT) ROOT_ONLY.set(root, resolved);
    }
    return resolved;
  }
  return checkOptions(options);
}

/** Options that are only a root, resolved (a bounded number of roots: each resource has one). */
const ROOT_ONLY = new Map<string, ResolvedOptions>();
const ROOT_ONLY_LIMIT = 256;

function checkOptions(options: XmlOptions): ResolvedOptions {
  const { root = 'root', itemName = 'item', namespace, declaration = true, unwrap } = options;
  if (unwrap !== undefined) {
    if (typeof unwrap !== 'object' || unwrap === null) throw argumentError('unwrap must be an object of member name → element name');
    for (const [key, name] of Object.entries(unwrap)) {
      if (!isNCName(name)) throw argumentError(`unwrap[${JSON.stringify(key)}] must be an XML name without a colon, got ${JSON.stringify(name)}`);
    }
  }
  if (root !== 'root' && !isNCName(root)) {
    throw argumentError(`root must be an XML name without a colon, got ${JSON.stringify(root)}`);
  }
  if (itemName !== 'item' && !isNCName(itemName)) {
    throw argumentError(`itemName must be an XML name without a colon, got ${JSON.stringify(itemName)}`);
  }
  if (typeof declaration !== 'boolean') throw argumentError('declaration must be a boolean');
  if (namespace !== undefined && !isNamespaceName(namespace)) {
    throw argumentError(`namespace must be a non-empty URI of XML characters, got ${JSON.stringify(namespace)}`);
  }
  return { root, itemName, declaration, ...(namespace === undefined ? {} : { namespace }), ...(unwrap === undefined ? {} : { unwrap }) };
}

// Namespaces in XML 1.0 §3: these two names must never be declared as a default namespace.
function isNamespaceName(uri: unknown): uri is string {
  if (typeof uri !== 'string' || uri === '') return false;
  if (uri === 'http://www.w3.org/XML/1998/namespace' || uri === 'http://www.w3.org/2000/xmlns/') return false;
  for (const char of uri) {
    const cp = char.codePointAt(0)!;
    // Controls (even tab/LF, which attribute-value normalisation would turn into spaces),
    // lone surrogates, U+FFFE and U+FFFF cannot be part of the declared name.
    if (cp < 0x20 || (cp >= 0xd800 && cp <= 0xdfff) || cp === 0xfffe || cp === 0xffff) return false;
  }
  return true;
}

function escapeAttribute(value: string): string {
  return escapeText(value).replace(/"/g, '&quot;');
}

/** Escape text content (N-10) in one pass; a string that needs nothing is returned as is. */
function escapeText(text: string): string {
  const length = text.length;
  let i = 0;
  for (; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c > 62 ? c >= 0xd800 : c < 32 || c === 38 || c === 60 || c === 62) break;
  }
  if (i === length) return text;

  let out = '';
  let from = 0;
  for (; i < length; i++) {
    const c = text.charCodeAt(i);
    let replacement: string;
    if (c > 62) {
      if (c < 0xd800) continue;
      if (c <= 0xdbff) {
        const next = text.charCodeAt(i + 1); // NaN past the end
        if (next >= 0xdc00 && next <= 0xdfff) {
          i++;
          continue;
        }
        replacement = REPLACEMENT;
      } else if (c <= 0xdfff || c >= 0xfffe) {
        replacement = REPLACEMENT;
      } else {
        continue;
      }
    } else if (c === 38) {
      replacement = '&amp;';
    } else if (c === 60) {
      replacement = '&lt;';
    } else if (c === 62) {
      replacement = '&gt;';
    } else if (c === 13) {
      // A raw CR would reach the reader as LF (XML 1.0 §2.11); a character reference survives.
      replacement = '&#13;';
    } else if (c < 32 && c !== 9 && c !== 10) {
      replacement = REPLACEMENT;
    } else {
      continue;
    }
    out += text.slice(from, i) + replacement;
    from = i + 1;
  }
  return out + text.slice(from);
}
