/**
 * The XML the query protocols answer with. IAM and STS (awsQuery) wrap results as
 * `<XResponse><XResult>…</XResult><ResponseMetadata><RequestId/></ResponseMetadata></XResponse>`
 * with list entries named `member`; EC2 (ec2Query) puts the result fields straight under
 * `<XResponse>` beside a lower-case `requestId`, with list entries named `item`. Errors differ
 * too: `ErrorResponse/Error` for awsQuery, `Response/Errors/Error` for EC2.
 */
import type { Cloud1Error } from './errors';

export const IAM_NAMESPACE = 'https://iam.amazonaws.com/doc/2010-05-08/';
export const STS_NAMESPACE = 'https://sts.amazonaws.com/doc/2011-06-15/';
export const EC2_NAMESPACE = 'http://ec2.amazonaws.com/doc/2016-11-15/';

/** A value rendered as XML: objects become child elements in key order, arrays become list items. */
export type XmlValue = string | number | boolean | null | undefined | XmlValue[] | XmlObject;
export interface XmlObject {
  [element: string]: XmlValue;
}

export type ListItemName = 'member' | 'item';

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => {
    switch (c) {
      case '&':
        return '&amp;';
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      case '"':
        return '&quot;';
      default:
        return '&apos;';
    }
  });
}

/** Renders the children of an element; `undefined` and `null` fields are left out, as the services do. */
export function renderXml(value: XmlValue, item: ListItemName): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) {
    return value.map((v) => `<${item}>${renderXml(v, item)}</${item}>`).join('');
  }
  if (typeof value === 'object') {
    let out = '';
    for (const [name, child] of Object.entries(value)) {
      if (child === undefined || child === null) continue;
      out += `<${name}>${renderXml(child, item)}</${name}>`;
    }
    return out;
  }
  return escapeXml(String(value));
}

/** Timestamps as IAM and STS print them: ISO 8601 in UTC, whole seconds. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function queryResponse(
  action: string,
  namespace: string,
  result: XmlObject | undefined,
  requestId: string,
): string {
  const body = result === undefined ? '' : `<${action}Result>${renderXml(result, 'member')}</${action}Result>`;
  return (
    `<${action}Response xmlns="${namespace}">${body}` +
    `<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>\n`
  );
}

export function queryErrorResponse(namespace: string, error: Cloud1Error, requestId: string): string {
  return (
    `<ErrorResponse xmlns="${namespace}"><Error><Type>${error.type}</Type>` +
    `<Code>${escapeXml(error.code)}</Code><Message>${escapeXml(error.message)}</Message></Error>` +
    `<RequestId>${requestId}</RequestId></ErrorResponse>\n`
  );
}

export function ec2Response(action: string, result: XmlObject, requestId: string): string {
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${EC2_NAMESPACE}">` +
    `<requestId>${requestId}</requestId>${renderXml(result, 'item')}</${action}Response>`
  );
}

export function ec2ErrorResponse(error: Cloud1Error, requestId: string): string {
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${escapeXml(error.code)}</Code>` +
    `<Message>${escapeXml(error.message)}</Message></Error></Errors><RequestID>${requestId}</RequestID></Response>`
  );
}
