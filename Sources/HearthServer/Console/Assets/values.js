// Firestore's typed values (the v1 REST JSON form) for viewing and editing: a draft model the
// editor changes in place, validated field by field before anything is sent.
import {h, clear} from './dom.js';

export const TYPES = ['string', 'number', 'boolean', 'null', 'timestamp', 'geopoint', 'reference', 'bytes', 'map', 'array', 'vector'];

const INT64_MIN = -(2n ** 63n), INT64_MAX = 2n ** 63n - 1n;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** REST value → draft node {type, text, lat, lng, children: [{key, node}]} */
export function decode(v, databasePrefix) {
  if (v === undefined || v === null) return {type: 'null'};
  if ('stringValue' in v) return {type: 'string', text: v.stringValue};
  if ('integerValue' in v) return {type: 'number', text: String(v.integerValue)};
  if ('doubleValue' in v) return {type: 'number', text: formatDouble(v.doubleValue)};
  if ('booleanValue' in v) return {type: 'boolean', text: v.booleanValue ? 'true' : 'false'};
  if ('nullValue' in v) return {type: 'null'};
  if ('timestampValue' in v) return {type: 'timestamp', text: v.timestampValue};
  if ('geoPointValue' in v) return {type: 'geopoint', lat: String(v.geoPointValue.latitude ?? 0), lng: String(v.geoPointValue.longitude ?? 0)};
  if ('referenceValue' in v) {
    const ref = v.referenceValue;
    const i = ref.indexOf('/documents/');
    return {type: 'reference', text: i >= 0 ? ref.slice(i + '/documents/'.length) : ref};
  }
  if ('bytesValue' in v) return {type: 'bytes', text: v.bytesValue};
  if ('arrayValue' in v) return {type: 'array', children: (v.arrayValue.values || []).map((x, i) => ({key: String(i), node: decode(x, databasePrefix)}))};
  if ('mapValue' in v) {
    const fields = v.mapValue.fields || {};
    if (fields.__type__ && fields.__type__.stringValue === '__vector__' && fields.value && 'arrayValue' in fields.value) {
      const nums = (fields.value.arrayValue.values || []).map(x => 'doubleValue' in x ? formatDouble(x.doubleValue) : String(x.integerValue ?? ''));
      return {type: 'vector', text: nums.join(', ')};
    }
    return {type: 'map', children: Object.keys(fields).sort().map(k => ({key: k, node: decode(fields[k], databasePrefix)}))};
  }
  return {type: 'null'};
}

function formatDouble(d) {
  if (typeof d === 'string') return d; // "NaN", "Infinity", "-Infinity"
  const s = String(d);
  return Number.isInteger(d) && !s.includes('e') ? s + '.0' : s;
}

/** Draft node → REST value; throws {message, node} on the first invalid node. */
export function encode(node, databasePrefix) {
  const err = validate(node);
  if (err) throw Object.assign(new Error(err), {node});
  switch (node.type) {
    case 'string': return {stringValue: node.text ?? ''};
    case 'number': {
      const t = node.text.trim();
      if (/^-?\d+$/.test(t)) return {integerValue: BigInt(t).toString()};
      if (['NaN', 'Infinity', '-Infinity'].includes(t)) return {doubleValue: t};
      return {doubleValue: Number(t)};
    }
    case 'boolean': return {booleanValue: node.text === 'true'};
    case 'null': return {nullValue: null};
    case 'timestamp': return {timestampValue: node.text.trim()};
    case 'geopoint': return {geoPointValue: {latitude: Number(node.lat), longitude: Number(node.lng)}};
    case 'reference': return {referenceValue: databasePrefix + '/documents/' + node.text.trim().replace(/^\/+|\/+$/g, '')};
    case 'bytes': return {bytesValue: node.text.trim()};
    case 'array': return {arrayValue: {values: node.children.map(c => encode(c.node, databasePrefix))}};
    case 'map': return {mapValue: {fields: encodeFields(node.children, databasePrefix)}};
    case 'vector': return {mapValue: {fields: {
      __type__: {stringValue: '__vector__'},
      value: {arrayValue: {values: splitNumbers(node.text).map(n => ({doubleValue: n}))}},
    }}};
  }
  throw new Error('Unknown type ' + node.type);
}

export function encodeFields(children, databasePrefix) {
  const fields = {};
  for (const c of children) {
    if (Object.prototype.hasOwnProperty.call(fields, c.key)) throw Object.assign(new Error(`Field "${c.key}" appears twice.`), {node: c.node});
    fields[c.key] = encode(c.node, databasePrefix);
  }
  return fields;
}

function splitNumbers(text) {
  return String(text || '').split(',').map(s => s.trim()).filter(s => s !== '').map(Number);
}

/** The reason a node's own value is invalid, or null. (Children are checked by encode.) */
export function validate(node) {
  const t = (node.text ?? '').trim();
  switch (node.type) {
    case 'number':
      if (t === '') return 'Enter a number.';
      if (/^-?\d+$/.test(t)) {
        const n = BigInt(t);
        return n < INT64_MIN || n > INT64_MAX ? 'Integers must fit in 64 bits (−9223372036854775808 … 9223372036854775807).' : null;
      }
      if (['NaN', 'Infinity', '-Infinity'].includes(t)) return null;
      return /^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) && isFinite(Number(t)) ? null : `"${t}" is not a number.`;
    case 'boolean': return t === 'true' || t === 'false' ? null : 'Choose true or false.';
    case 'timestamp': {
      const m = RFC3339.exec(t);
      if (!m) return 'Use RFC 3339, e.g. 2026-11-25T17:00:00Z or 2026-11-25T17:00:00.123456+01:00.';
      const [y, mo, d, hh, mm, ss] = m.slice(1, 7).map(Number);
      if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate() || hh > 23 || mm > 59 || ss > 59) return 'That date or time does not exist.';
      return null;
    }
    case 'geopoint': {
      const lat = Number(node.lat), lng = Number(node.lng);
      if (String(node.lat ?? '').trim() === '' || !isFinite(lat) || lat < -90 || lat > 90) return 'Latitude must be a number from -90 to 90.';
      if (String(node.lng ?? '').trim() === '' || !isFinite(lng) || lng < -180 || lng > 180) return 'Longitude must be a number from -180 to 180.';
      return null;
    }
    case 'reference': {
      const segs = t.replace(/^\/+|\/+$/g, '').split('/');
      if (t === '' || segs.length % 2 !== 0 || segs.some(s => s === '' || s === '.' || s === '..')) return 'A reference is a document path: collection/document[/collection/document…].';
      return null;
    }
    case 'bytes': return BASE64.test(t) ? null : 'Bytes are written in base64 (A–Z, a–z, 0–9, +, /, = padding).';
    case 'vector': {
      const parts = String(node.text || '').split(',').map(s => s.trim()).filter(s => s !== '');
      if (parts.length === 0) return 'A vector needs at least one number, e.g. 0.1, 0.2, 0.3.';
      const bad = parts.find(p => !isFinite(Number(p)));
      return bad !== undefined ? `"${bad}" is not a number.` : null;
    }
    default: return null;
  }
}

export function validateKey(key, siblings) {
  if (key === '') return 'Enter a field name.';
  if (siblings.filter(k => k === key).length > 1) return `"${key}" is used twice.`;
  if (/^__.*__$/.test(key)) return 'Field names of the form __name__ are reserved.';
  if (new TextEncoder().encode(key).length > 1500) return 'Field names are at most 1,500 bytes.';
  return null;
}

export function emptyNode(type) {
  switch (type) {
    case 'map': case 'array': return {type, children: []};
    case 'geopoint': return {type, lat: '0', lng: '0'};
    case 'boolean': return {type, text: 'true'};
    case 'number': return {type, text: '0'};
    case 'timestamp': return {type, text: new Date().toISOString()};
    default: return {type, text: ''};
  }
}

/** A read-only view of fields. */
export function viewFields(fields, databasePrefix) {
  const root = h('div', {class: 'view-fields'});
  const keys = Object.keys(fields || {}).sort();
  if (keys.length === 0) root.appendChild(h('p', {class: 'muted small'}, 'This document has no fields.'));
  for (const k of keys) root.appendChild(viewNode(k, decode(fields[k], databasePrefix)));
  return root;
}

function viewNode(key, node) {
  const row = h('div', {class: 'vf'}, h('div', {class: 'k'}, key, h('span', {class: 't'}, node.type)));
  if (node.type === 'map' || node.type === 'array') {
    row.appendChild(h('div', {class: 'muted small'}, node.type === 'map' ? `{${node.children.length} fields}` : `[${node.children.length} items]`));
    const nested = h('div', {class: 'nested'});
    for (const c of node.children) nested.appendChild(viewNode(c.key, c.node));
    row.appendChild(nested);
  } else {
    row.appendChild(h('div', {class: 'mono', style: 'word-break:break-all'}, display(node)));
  }
  return row;
}

export function display(node) {
  switch (node.type) {
    case 'null': return 'null';
    case 'string': return JSON.stringify(node.text);
    case 'geopoint': return `[${node.lat}° N, ${node.lng}° E]`;
    case 'reference': return '/' + node.text;
    case 'vector': return `vector(${node.text})`;
    case 'map': return `{${node.children.length} fields}`;
    case 'array': return `[${node.children.length} items]`;
    default: return node.text;
  }
}

/**
 * An editor over a list of {key, node} children (a document's fields, a map, an array).
 * Every input validates as it changes; `check()` marks every invalid input and returns the count.
 */
export function fieldEditor(children, {isArray = false} = {}) {
  const root = h('div', {class: 'fields'});
  const rows = [];
  function render() {
    clear(root);
    rows.length = 0;
    children.forEach((child, index) => root.appendChild(row(child, index)));
    root.appendChild(h('div', null, h('button', {type: 'button', class: 'link', onclick: () => {
      children.push({key: isArray ? String(children.length) : '', node: emptyNode('string')});
      render();
      const inputs = root.querySelectorAll('input.key');
      if (inputs.length) inputs[inputs.length - 1].focus();
    }}, isArray ? '+ Add item' : '+ Add field')));
  }
  function row(child, index) {
    const keyInput = h('input', {type: 'text', class: 'key', value: isArray ? String(index) : child.key,
      'aria-label': 'field name', disabled: isArray, placeholder: 'field'});
    const typeSelect = h('select', {'aria-label': 'field type'}, TYPES.map(t => h('option', {value: t}, t)));
    typeSelect.value = child.node.type;
    const valueCell = h('div', {class: 'value-cell'});
    const errorLine = h('div', {class: 'field-error', role: 'alert'});
    const nested = h('div', {class: 'nested'});
    const remove = h('button', {type: 'button', class: 'link', title: 'Remove', 'aria-label': 'remove field', onclick: () => {
      children.splice(index, 1);
      if (isArray) children.forEach((c, i) => { c.key = String(i); });
      render();
    }}, '✕');
    let nestedEditor = null;
    const checks = [];
    function fillValue() {
      clear(valueCell); clear(nested); checks.length = 0; nestedEditor = null;
      const node = child.node;
      const mark = (input, message) => {
        input.setAttribute('aria-invalid', message ? 'true' : 'false');
        errorLine.textContent = message || '';
        return message;
      };
      if (node.type === 'map' || node.type === 'array') {
        nestedEditor = fieldEditor(node.children, {isArray: node.type === 'array'});
        nested.appendChild(nestedEditor.element);
        valueCell.appendChild(h('span', {class: 'muted small'}, node.type === 'map' ? 'map' : 'array'));
      } else if (node.type === 'null') {
        valueCell.appendChild(h('span', {class: 'muted'}, 'null'));
      } else if (node.type === 'boolean') {
        const s = h('select', {'aria-label': 'value'}, h('option', {value: 'true'}, 'true'), h('option', {value: 'false'}, 'false'));
        s.value = node.text === 'false' ? 'false' : 'true';
        s.onchange = () => { node.text = s.value; };
        valueCell.appendChild(s);
      } else if (node.type === 'geopoint') {
        const lat = h('input', {type: 'text', value: node.lat, 'aria-label': 'latitude', placeholder: 'latitude'});
        const lng = h('input', {type: 'text', value: node.lng, 'aria-label': 'longitude', placeholder: 'longitude'});
        const check = () => { node.lat = lat.value; node.lng = lng.value; const m = validate(node); mark(lat, m); lng.setAttribute('aria-invalid', m ? 'true' : 'false'); return m; };
        lat.oninput = check; lng.oninput = check;
        checks.push(check);
        valueCell.appendChild(h('div', {class: 'geo'}, lat, lng));
      } else {
        const placeholder = {timestamp: '2026-11-25T17:00:00Z', reference: 'collection/document', bytes: 'base64', vector: '0.1, 0.2, 0.3', number: '42 or 3.14'}[node.type] || '';
        const input = node.type === 'string' && (node.text || '').length > 60
          ? h('textarea', {'aria-label': 'value'}) : h('input', {type: 'text', 'aria-label': 'value', placeholder});
        input.value = node.text ?? '';
        input.style.width = '100%';
        const check = () => { node.text = input.value; return mark(input, validate(node)); };
        input.oninput = check;
        checks.push(check);
        valueCell.appendChild(input);
      }
    }
    const checkKey = () => {
      if (isArray) return null;
      child.key = keyInput.value;
      const m = validateKey(keyInput.value, children.map(c => c.key));
      keyInput.setAttribute('aria-invalid', m ? 'true' : 'false');
      if (m) errorLine.textContent = m; else if (errorLine.textContent.startsWith('Enter a field') || errorLine.textContent.includes('used twice') || errorLine.textContent.includes('reserved')) errorLine.textContent = '';
      return m;
    };
    keyInput.oninput = checkKey;
    typeSelect.onchange = () => {
      const old = child.node;
      const next = emptyNode(typeSelect.value);
      if (old.text !== undefined && next.text !== undefined && ['string', 'number', 'timestamp', 'reference', 'bytes', 'vector'].includes(next.type)) next.text = old.type === 'null' ? next.text : old.text;
      child.node = next;
      errorLine.textContent = '';
      fillValue();
    };
    fillValue();
    rows.push({check: () => {
      let bad = 0;
      if (checkKey()) bad++;
      for (const c of checks) if (c()) bad++;
      if (nestedEditor) bad += nestedEditor.check();
      return bad;
    }});
    return h('div', {class: 'field'}, keyInput, typeSelect, valueCell, remove, h('div', {style: 'grid-column:1/-1'}, errorLine), nested);
  }
  render();
  return {element: root, check: () => rows.reduce((n, r) => n + r.check(), 0)};
}
