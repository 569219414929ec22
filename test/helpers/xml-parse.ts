// Test helper: parse an XML document with a real, strict, namespace-aware parser (saxes) and
// return a plain tree. Any well-formedness or namespace error throws, so a successful parse is
// the proof that a document is well-formed XML 1.0 (N-10).
import { SaxesParser } from 'saxes';
import type { SaxesTagNS, XMLDecl } from 'saxes';

export interface XmlElement {
  /** Qualified name as written (`param1`, `xsi:foo`). */
  name: string;
  /** Attributes by qualified name, namespace declarations included (`xmlns`, `xmlns:xsi`, `xsi:nil`). */
  attributes: Record<string, string>;
  children: XmlElement[];
  /** The element's own character data (entities and character references resolved). */
  text: string;
  /** Namespace URI of the element, when it has one. */
  ns?: string;
}

export interface XmlDocument {
  readonly declaration: XMLDecl | undefined;
  readonly root: XmlElement;
}

/** Parse a whole document; throws on any well-formedness or namespace error, or on a DOCTYPE. */
export function parseXmlDocument(text: string): XmlDocument {
  // saxes 6 lets a lone high surrogate through when a non-surrogate follows it; such a string
  // has no UTF-8 form and is not XML, so refuse it here (\p{Cs} with /u matches lone halves only).
  const lone = /\p{Cs}/u.exec(text);
  if (lone !== null) throw new Error(`lone surrogate at offset ${lone.index}`);
  const parser = new SaxesParser({ xmlns: true, position: true });
  // The tree is built with an explicit stack, so very deep documents are fine.
  const open: XmlElement[] = [];
  let root: XmlElement | undefined;
  let declaration: XMLDecl | undefined;

  parser.on('error', (error) => {
    throw error;
  });
  parser.on('xmldecl', (decl) => {
    // Keep only the pseudo-attributes that were written, so deepEqual against a literal works.
    declaration = Object.fromEntries(Object.entries(decl).filter(([, v]) => v !== undefined));
  });
  parser.on('doctype', () => {
    throw new Error('unexpected DOCTYPE: the serializer must never emit one');
  });
  parser.on('opentag', (tag: SaxesTagNS) => {
    const attributes: Record<string, string> = {};
    for (const [name, attribute] of Object.entries(tag.attributes)) attributes[name] = attribute.value;
    const element: XmlElement = { name: tag.name, attributes, children: [], text: '' };
    if (tag.uri !== '') element.ns = tag.uri;
    const parent = open[open.length - 1];
    if (parent === undefined) root = element;
    else parent.children.push(element);
    open.push(element);
  });
  parser.on('closetag', () => {
    open.pop();
  });
  const addText = (chunk: string): void => {
    const current = open[open.length - 1];
    if (current !== undefined) current.text += chunk;
  };
  parser.on('text', addText);
  parser.on('cdata', addText);

  parser.write(text).close();
  if (root === undefined) throw new Error('no root element');
  return { declaration, root };
}

/** Parse a document and return its root element (see parseXmlDocument). */
export function parseXml(text: string): XmlElement {
  return parseXmlDocument(text).root;
}
