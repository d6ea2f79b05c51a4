// Firestore: a collection/document browser with typed editing, recursive delete, a query builder
// whose results follow a live listener, and composite indexes.
import {h, clear, toast, errorBanner, dialog, confirmAction, formatTime} from './dom.js';
import {api, proxy} from './api.js';
import {viewFields, fieldEditor, decode, encode, encodeFields, display, TYPES, emptyNode, validate} from './values.js';

let prefix = '';   // projects/<p>/databases/(default)
let base = '';     // the proxied REST path of …/documents

function docURL(segments) { return base + (segments.length ? '/' + segments.map(encodeURIComponent).join('/') : ''); }
function shortName(name) { return name.slice(name.lastIndexOf('/') + 1); }
function pathOf(name) { const i = name.indexOf('/documents/'); return i >= 0 ? name.slice(i + 11) : ''; }

export async function render(main, context, rest) {
  prefix = `projects/${context.session.project}/databases/(default)`;
  base = `${proxy.firestore}/v1/${prefix}/documents`;
  const [tab, ...path] = rest ? rest.split('/') : ['data'];
  const tabs = [['data', 'Data'], ['query', 'Query'], ['indexes', 'Indexes']];
  main.appendChild(h('h1', null, 'Firestore'));
  main.appendChild(h('div', {class: 'tabs'}, tabs.map(([id, label]) =>
    h('button', {type: 'button', class: (tab || 'data') === id ? 'active' : '', onclick: () => context.navigate('firestore/' + id)}, label))));
  const body = h('div');
  main.appendChild(body);
  if (tab === 'query') return queryTab(body, context);
  if (tab === 'indexes') return indexesTab(body, context);
  return dataTab(body, context, path.filter(s => s !== ''));
}

// ---------------------------------------------------------------- data browser

async function dataTab(root, context, segs) {
  const isDoc = segs.length > 0 && segs.length % 2 === 0;
  const collPath = isDoc ? segs.slice(0, -1) : segs;
  const parentDoc = collPath.slice(0, -1);
  const go = s => context.navigate('firestore/data/' + s.map(encodeURIComponent).join('/'));

  const crumbs = h('div', {class: 'crumbs'}, h('a', {href: '#/firestore/data'}, '/'));
  segs.forEach((s, i) => crumbs.append(i ? ' / ' : '', h('a', {href: '#/firestore/data/' + segs.slice(0, i + 1).map(encodeURIComponent).join('/')}, s)));
  root.appendChild(crumbs);

  const col1 = column(parentDoc.length ? parentDoc.join('/') : '(root)');
  const col2 = column(collPath.length ? collPath.join('/') : '');
  const col3 = column(isDoc ? segs[segs.length - 1] : '');
  root.appendChild(h('div', {class: 'columns'}, col1.element, col2.element, col3.element));

  col1.actions.appendChild(h('button', {type: 'button', class: 'link', onclick: () => startCollection(parentDoc, go)}, '+ Start collection'));
  pagedList(col1.body, async token => {
    const r = await api('POST', docURL(parentDoc) + ':listCollectionIds', {pageSize: 100, pageToken: token || undefined});
    return {items: (r && r.collectionIds || []).map(id => ({label: id, href: parentDoc.concat([id]), selected: id === collPath[collPath.length - 1]})), next: r && r.nextPageToken};
  }, go, 'No collections yet.');

  if (collPath.length) {
    col2.actions.append(
      h('button', {type: 'button', class: 'link', onclick: () => addDocument(collPath, go)}, '+ Add document'),
      h('button', {type: 'button', class: 'link', style: 'color:var(--bad)', title: 'Delete every document of this collection, with their subcollections',
        onclick: () => deleteCollection(collPath, () => go(parentDoc))}, 'Delete…'));
    pagedList(col2.body, async token => {
      const q = new URLSearchParams({pageSize: '50', showMissing: 'true'});
      if (token) q.set('pageToken', token);
      const r = await api('GET', docURL(collPath) + '?' + q);
      return {items: (r && r.documents || []).map(d => ({label: shortName(d.name), href: collPath.concat([shortName(d.name)]),
        selected: isDoc && shortName(d.name) === segs[segs.length - 1], missing: !d.createTime})), next: r && r.nextPageToken};
    }, go, 'No documents.');
  } else {
    col2.body.appendChild(h('p', {class: 'muted small'}, 'Choose a collection.'));
  }

  if (isDoc) await documentPanel(col3, segs, go, parentDoc);
  else col3.body.appendChild(h('p', {class: 'muted small'}, collPath.length ? 'Choose a document.' : ''));
}

function column(title) {
  const actions = h('span', {class: 'row'});
  const body = h('div', {class: 'column-body'});
  const element = h('section', {class: 'column'}, h('div', {class: 'column-head'}, h('span', {class: 'title', title}, title), actions), body);
  return {element, body, actions};
}

function pagedList(container, load, go, emptyText) {
  const list = h('ul', {class: 'list'});
  const more = h('button', {type: 'button', class: 'link hidden'}, 'Load more');
  const status = h('div');
  container.append(status, list, more);
  let token = null;
  async function page() {
    more.disabled = true;
    try {
      const {items, next} = await load(token);
      for (const it of items) {
        list.appendChild(h('li', null, h('a', {href: '#/firestore/data/' + it.href.map(encodeURIComponent).join('/'),
          class: (it.selected ? 'selected ' : '') + (it.missing ? 'missing' : ''), title: it.missing ? 'No document here, only subcollections' : it.label}, it.label)));
      }
      if (!list.children.length) status.appendChild(h('p', {class: 'muted small'}, emptyText));
      token = next || null;
      more.classList.toggle('hidden', !token);
    } catch (e) { status.appendChild(errorBanner(e)); }
    more.disabled = false;
  }
  more.onclick = page;
  page();
}

async function documentPanel(col, segs, go, parentDoc) {
  let doc = null;
  try {
    doc = await api('GET', docURL(segs));
  } catch (e) {
    if (e.status !== 404) { col.body.appendChild(errorBanner(e)); return; }
  }
  const subcollections = h('ul', {class: 'list'});
  const edit = h('button', {type: 'button', disabled: !doc}, 'Edit');
  const del = h('button', {type: 'button', class: 'danger'}, 'Delete…');
  col.actions.append(edit, del);
  const view = h('div');
  if (doc) {
    view.append(h('p', {class: 'small muted'}, 'Updated ', formatTime(doc.updateTime), ' · created ', formatTime(doc.createTime)), viewFields(doc.fields, prefix));
  } else {
    view.appendChild(h('p', {class: 'muted'}, 'This document does not exist; it only holds subcollections.'));
    edit.disabled = false;
    edit.textContent = 'Create';
  }
  col.body.append(view, h('h3', null, 'Collections ', h('button', {type: 'button', class: 'link', onclick: () => startCollection(segs, go)}, '+ Start collection')), subcollections);
  try {
    const r = await api('POST', docURL(segs) + ':listCollectionIds', {pageSize: 200});
    const ids = r && r.collectionIds || [];
    for (const id of ids) subcollections.appendChild(h('li', null, h('a', {href: '#/firestore/data/' + segs.concat([id]).map(encodeURIComponent).join('/')}, id)));
    if (!ids.length) subcollections.appendChild(h('li', {class: 'muted small', style: 'padding:4px 12px'}, 'None.'));
  } catch (e) { col.body.appendChild(errorBanner(e)); }

  edit.onclick = () => {
    const children = Object.keys(doc && doc.fields || {}).sort().map(k => ({key: k, node: decode(doc.fields[k], prefix)}));
    const editor = fieldEditor(children);
    const status = h('div');
    const save = h('button', {type: 'button', class: 'primary'}, 'Save');
    const cancel = h('button', {type: 'button', onclick: () => go(segs)}, 'Cancel');
    clear(col.body).append(status, editor.element, h('div', {class: 'row', style: 'margin-top:12px'}, save, cancel));
    save.onclick = async () => {
      clear(status);
      const bad = editor.check();
      if (bad) { status.appendChild(errorBanner(new Error(`Fix the ${bad} highlighted value${bad > 1 ? 's' : ''} first.`))); return; }
      let fields;
      try { fields = encodeFields(children, prefix); } catch (e) { status.appendChild(errorBanner(e)); return; }
      const q = doc ? '?currentDocument.updateTime=' + encodeURIComponent(doc.updateTime) : '?currentDocument.exists=false';
      save.disabled = true;
      try {
        await api('PATCH', docURL(segs) + q, {fields});
        toast('Saved ' + segs.join('/'));
        go(segs);
      } catch (e) {
        status.appendChild(errorBanner(e.status === 400 && /FAILED_PRECONDITION|precondition/i.test(e.message)
          ? new Error('Someone else changed this document while you edited it. Reload it and edit again. (' + e.message + ')') : e));
        save.disabled = false;
      }
    };
  };
  del.onclick = async () => {
    const names = await collectSubtree(segs);
    const extra = names.length > 1 ? ` and ${names.length - 1} document${names.length > 2 ? 's' : ''} in its subcollections` : '';
    if (!(await confirmAction('Delete document', `Delete ${segs.join('/')}${extra}? This cannot be undone.`, {typed: names.length > 1 ? segs[segs.length - 1] : undefined}))) return;
    await deleteNames(names);
    toast(`Deleted ${names.length} document${names.length > 1 ? 's' : ''}.`);
    go(segs.slice(0, -1));
  };
}

/** Every document name at and under a document path (the document itself first), following subcollections. */
async function collectSubtree(docSegs) {
  const names = [`${prefix}/documents/${docSegs.join('/')}`];
  const ids = ((await api('POST', docURL(docSegs) + ':listCollectionIds', {pageSize: 1000})) || {}).collectionIds || [];
  for (const id of ids) names.push(...(await collectCollection(docSegs.concat([id]))));
  return names;
}

async function collectCollection(collSegs) {
  const names = [];
  let token = null;
  do {
    const q = new URLSearchParams({pageSize: '300', showMissing: 'true', 'mask.fieldPaths': '__name__'});
    if (token) q.set('pageToken', token);
    const r = await api('GET', docURL(collSegs) + '?' + q) || {};
    for (const d of r.documents || []) names.push(...(await collectSubtree(pathOf(d.name).split('/'))));
    token = r.nextPageToken;
  } while (token);
  return names;
}

async function deleteNames(names) {
  for (let i = 0; i < names.length; i += 500) {
    const writes = names.slice(i, i + 500).map(name => ({delete: name}));
    const r = await api('POST', base + ':batchWrite', {writes});
    const failed = (r && r.status || []).find(s => s.code);
    if (failed) throw new Error(failed.message || 'A delete failed.');
  }
}

async function deleteCollection(collSegs, done) {
  const names = await collectCollection(collSegs);
  if (!names.length) { toast('The collection is already empty.'); return; }
  if (!(await confirmAction('Delete collection', `Delete all ${names.length} documents of ${collSegs.join('/')} (with their subcollections)? This cannot be undone.`, {typed: collSegs[collSegs.length - 1]}))) return;
  await deleteNames(names);
  toast(`Deleted ${names.length} documents.`);
  done();
}

async function addDocument(collSegs, go) { return documentDialog('Add document', collSegs, null, go); }
async function startCollection(parentSegs, go) { return documentDialog('Start a collection', null, parentSegs, go); }

async function documentDialog(title, collSegs, parentSegs, go) {
  const collInput = parentSegs ? h('input', {type: 'text', id: 'new-collection', 'aria-label': 'collection id', placeholder: 'collection id', style: 'width:100%'}) : null;
  const idInput = h('input', {type: 'text', id: 'new-document', 'aria-label': 'document id', placeholder: 'leave empty for an automatic id', style: 'width:100%'});
  const children = [{key: '', node: emptyNode('string')}];
  const editor = fieldEditor(children);
  const status = h('div');
  const body = h('div', null, status,
    collInput ? [h('label', null, 'Collection id'), collInput] : null,
    h('label', null, 'Document id'), idInput, h('label', null, 'Fields'), editor.element);
  const ok = await dialog(title, body, [
    {label: 'Cancel', value: false},
    {label: 'Save', value: true, class: 'primary', validate: async () => {
      clear(status);
      const coll = collSegs || parentSegs.concat([collInput.value.trim()]);
      if (collInput && !/^[^/]+$/.test(collInput.value.trim())) { collInput.setAttribute('aria-invalid', 'true'); status.appendChild(errorBanner(new Error('Enter a collection id without "/".'))); return false; }
      if (idInput.value.includes('/')) { idInput.setAttribute('aria-invalid', 'true'); status.appendChild(errorBanner(new Error('A document id cannot contain "/".'))); return false; }
      const filled = children.filter(c => !(c.key === '' && c.node.type === 'string' && !c.node.text));
      children.length = 0; children.push(...filled);
      const bad = editor.check();
      if (bad) { status.appendChild(errorBanner(new Error(`Fix the ${bad} highlighted value${bad > 1 ? 's' : ''} first.`))); return false; }
      try {
        const fields = encodeFields(children, prefix);
        const id = idInput.value.trim();
        const created = id
          ? await api('PATCH', docURL(coll.concat([id])) + '?currentDocument.exists=false', {fields})
          : await api('POST', docURL(coll), {fields});
        toast('Created ' + pathOf(created.name));
        setTimeout(() => go(pathOf(created.name).split('/')), 0);
        return true;
      } catch (e) { status.appendChild(errorBanner(e)); return false; }
    }},
  ]);
  return ok;
}

// ---------------------------------------------------------------- query builder

const OPS = [['==', 'EQUAL'], ['!=', 'NOT_EQUAL'], ['<', 'LESS_THAN'], ['<=', 'LESS_THAN_OR_EQUAL'], ['>', 'GREATER_THAN'], ['>=', 'GREATER_THAN_OR_EQUAL'],
  ['array-contains', 'ARRAY_CONTAINS'], ['array-contains-any', 'ARRAY_CONTAINS_ANY'], ['in', 'IN'], ['not-in', 'NOT_IN']];
const LIST_OPS = new Set(['ARRAY_CONTAINS_ANY', 'IN', 'NOT_IN']);
const SCALAR_TYPES = TYPES.filter(t => !['map', 'array', 'vector'].includes(t));

function queryTab(root, context) {
  const parent = h('input', {type: 'text', id: 'q-parent', placeholder: '(root) or a document path', style: 'width:100%'});
  const collection = h('input', {type: 'text', id: 'q-collection', placeholder: 'tasks', style: 'width:100%'});
  const group = h('input', {type: 'checkbox', id: 'q-group'});
  const filters = h('div', {class: 'filters'});
  const orderField = h('input', {type: 'text', id: 'q-order', placeholder: 'field (optional)'});
  const orderDir = h('select', {id: 'q-direction'}, h('option', {value: 'ASCENDING'}, 'ascending'), h('option', {value: 'DESCENDING'}, 'descending'));
  const limit = h('input', {type: 'number', id: 'q-limit', min: '1', max: '1000', value: '50', style: 'width:90px'});
  const status = h('div');
  const results = h('div');
  const live = h('input', {type: 'checkbox', id: 'q-live'});
  const liveBadge = h('span', {class: 'badge live hidden', id: 'q-live-badge'}, 'live');
  const filterRows = [];
  function addFilter() {
    const field = h('input', {type: 'text', placeholder: 'field', 'aria-label': 'filter field'});
    const op = h('select', {'aria-label': 'operator'}, OPS.map(([label, v]) => h('option', {value: v}, label)));
    const type = h('select', {'aria-label': 'value type'}, SCALAR_TYPES.map(t => h('option', {value: t}, t)));
    const value = h('input', {type: 'text', placeholder: 'value', 'aria-label': 'filter value'});
    const error = h('div', {class: 'field-error'});
    const rowEl = h('div', {class: 'filter'}, field, op, type, value, h('button', {type: 'button', class: 'link', onclick: () => {
      filterRows.splice(filterRows.indexOf(entry), 1); rowEl.remove(); error.remove();
    }}, '✕'));
    const entry = {field, op, type, value, error};
    filterRows.push(entry);
    filters.append(rowEl, error);
  }
  const form = h('form', {class: 'panel', onsubmit: e => { e.preventDefault(); run(); }},
    h('div', {class: 'grid2'},
      h('div', null, h('label', {for: 'q-parent'}, 'Parent document'), parent),
      h('div', null, h('label', {for: 'q-collection'}, 'Collection id'), collection,
        h('label', {class: 'row', style: 'color:var(--ink)'}, group, 'Collection group (all collections with this id under the parent)'))),
    h('h3', null, 'Filters'), filters,
    h('button', {type: 'button', class: 'link', onclick: addFilter}, '+ Add filter'),
    h('div', {class: 'row', style: 'margin-top:8px'}, h('label', {for: 'q-order', style: 'margin:0'}, 'Order by'), orderField, orderDir,
      h('label', {for: 'q-limit', style: 'margin:0'}, 'Limit'), limit),
    h('div', {class: 'row', style: 'margin-top:12px'}, h('button', {type: 'submit', class: 'primary'}, 'Run'),
      h('label', {class: 'row', style: 'margin:0;color:var(--ink)'}, live, 'Live results'), liveBadge));
  root.append(form, status, results);

  let source = null;
  context.setCleanup(() => { if (source) source.close(); });

  function build() {
    let bad = 0;
    const cid = collection.value.trim();
    collection.setAttribute('aria-invalid', cid && !cid.includes('/') ? 'false' : 'true');
    if (!cid || cid.includes('/')) bad++;
    const parentPath = parent.value.trim().replace(/^\/+|\/+$/g, '');
    const parentOK = parentPath === '' || parentPath.split('/').length % 2 === 0;
    parent.setAttribute('aria-invalid', parentOK ? 'false' : 'true');
    if (!parentOK) bad++;
    const where = [];
    for (const f of filterRows) {
      f.error.textContent = '';
      const fieldPath = f.field.value.trim();
      if (!fieldPath) { f.field.setAttribute('aria-invalid', 'true'); f.error.textContent = 'Enter a field.'; bad++; continue; }
      f.field.setAttribute('aria-invalid', 'false');
      const listOp = LIST_OPS.has(f.op.value);
      const texts = listOp ? f.value.value.split(',').map(s => s.trim()).filter(s => s !== '') : [f.value.value];
      const nodes = texts.map(t => f.type.value === 'geopoint'
        ? (() => { const [lat, lng] = t.split(/[ ,;]+/); return {type: 'geopoint', lat, lng}; })()
        : {type: f.type.value, text: f.type.value === 'null' ? undefined : t});
      const message = (listOp && !nodes.length) ? 'List operators take one or more values separated by commas.' : nodes.map(validate).find(m => m);
      if (message) { f.value.setAttribute('aria-invalid', 'true'); f.error.textContent = message; bad++; continue; }
      f.value.setAttribute('aria-invalid', 'false');
      const field = {fieldPath: quotePath(fieldPath)};
      // Firestore spells == null and == NaN as unary filters.
      const unary = !listOp && (f.op.value === 'EQUAL' || f.op.value === 'NOT_EQUAL') &&
        (nodes[0].type === 'null' ? 'NULL' : nodes[0].type === 'number' && nodes[0].text.trim() === 'NaN' ? 'NAN' : null);
      if (unary) { where.push({unaryFilter: {field, op: (f.op.value === 'EQUAL' ? 'IS_' : 'IS_NOT_') + unary}}); continue; }
      const value = listOp ? {arrayValue: {values: nodes.map(n => encode(n, prefix))}} : encode(nodes[0], prefix);
      where.push({fieldFilter: {field, op: f.op.value, value}});
    }
    const n = Number(limit.value);
    const limitOK = Number.isInteger(n) && n >= 1 && n <= 1000;
    limit.setAttribute('aria-invalid', limitOK ? 'false' : 'true');
    if (!limitOK) bad++;
    if (bad) return null;
    const structuredQuery = {from: [{collectionId: cid, allDescendants: group.checked}], limit: n};
    if (where.length === 1) structuredQuery.where = where[0];
    if (where.length > 1) structuredQuery.where = {compositeFilter: {op: 'AND', filters: where}};
    if (orderField.value.trim()) structuredQuery.orderBy = [{field: {fieldPath: quotePath(orderField.value.trim())}, direction: orderDir.value}];
    return {parentPath, structuredQuery};
  }

  async function run() {
    clear(status);
    if (source) { source.close(); source = null; liveBadge.classList.add('hidden'); }
    const q = build();
    if (!q) { status.appendChild(errorBanner(new Error('Fix the highlighted inputs first.'))); return; }
    const target = q.parentPath ? docURL(q.parentPath.split('/')) : base;
    try {
      const r = await api('POST', target + ':runQuery', {structuredQuery: q.structuredQuery});
      showResults(results, (r || []).filter(x => x.document).map(x => x.document), null);
    } catch (e) { status.appendChild(errorBanner(e)); return; }
    if (live.checked) {
      const params = new URLSearchParams({parent: q.parentPath, query: JSON.stringify(q.structuredQuery)});
      source = new EventSource('/api/firestore/listen?' + params);
      liveBadge.classList.remove('hidden');
      let previous = null;
      source.addEventListener('snapshot', ev => {
        const snap = JSON.parse(ev.data);
        showResults(results, snap.documents, previous, snap.readTime);
        previous = new Map(snap.documents.map(d => [d.name, d.updateTime]));
      });
      source.addEventListener('failure', ev => {
        clear(status).appendChild(errorBanner(new Error(JSON.parse(ev.data).message)));
        source.close(); liveBadge.classList.add('hidden');
      });
      source.onerror = () => { liveBadge.textContent = 'reconnecting…'; };
      source.onopen = () => { liveBadge.textContent = 'live'; };
    }
  }
}

function quotePath(path) {
  return path.split('.').map(s => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s) || (s.startsWith('`') && s.endsWith('`')) ? s : '`' + s.replace(/[`\\]/g, m => '\\' + m) + '`').join('.');
}

function showResults(container, documents, previous, readTime) {
  clear(container);
  const head = h('div', {class: 'row'}, h('h2', {style: 'margin:0'}, `${documents.length} document${documents.length === 1 ? '' : 's'}`),
    readTime ? h('span', {class: 'muted small'}, 'as of ', formatTime(readTime)) : null);
  const table = h('table', {id: 'query-results'}, h('thead', null, h('tr', null, h('th', null, 'Document'), h('th', null, 'Fields'))),
    h('tbody', null, documents.map(d => {
      const fields = Object.keys(d.fields || {}).sort().map(k => `${k}: ${display(decode(d.fields[k], prefix))}`).join(', ');
      const changed = previous && previous.get(d.name) !== d.updateTime;
      return h('tr', {class: 'clickable' + (changed ? ' flash' : ''), dataset: {name: pathOf(d.name)}, onclick: () => { location.hash = '#/firestore/data/' + pathOf(d.name).split('/').map(encodeURIComponent).join('/'); }},
        h('td', {class: 'mono'}, pathOf(d.name)), h('td', {class: 'mono small', style: 'word-break:break-all'}, fields));
    })));
  container.append(h('div', {class: 'panel'}, head, h('div', {class: 'table-wrap'}, table)));
}

// ---------------------------------------------------------------- indexes

async function indexesTab(root) {
  const status = h('div');
  const list = h('div');
  root.append(status, list);
  async function load() {
    clear(list);
    try {
      const r = await api('GET', '/api/firestore/indexes');
      const indexes = r.indexes || [];
      list.appendChild(h('div', {class: 'panel'}, h('h2', null, 'Composite indexes'),
        indexes.length === 0 ? h('p', {class: 'muted'}, 'No composite indexes. Single-field indexes are automatic.') :
          h('div', {class: 'table-wrap'}, h('table', {id: 'indexes'},
            h('thead', null, h('tr', null, h('th', null, 'Collection group'), h('th', null, 'Fields'), h('th', null, 'Scope'), h('th', null, 'State'))),
            h('tbody', null, indexes.map(ix => h('tr', null, h('td', {class: 'mono'}, ix.collectionGroup),
              h('td', {class: 'mono small'}, ix.fields.map(f => `${f.fieldPath} ${f.order ? f.order.toLowerCase() : 'array-contains'}`).join(', ')),
              h('td', null, ix.queryScope === 'COLLECTION_GROUP' ? 'collection group' : 'collection'),
              h('td', null, h('span', {class: 'badge ok'}, (ix.state || 'READY').toLowerCase())))))))));
    } catch (e) { list.appendChild(errorBanner(e)); }
  }
  const group = h('input', {type: 'text', id: 'ix-group', placeholder: 'tasks'});
  const scope = h('select', {id: 'ix-scope'}, h('option', {value: 'COLLECTION'}, 'collection'), h('option', {value: 'COLLECTION_GROUP'}, 'collection group'));
  const fields = h('div');
  const fieldRows = [];
  function addField() {
    const path = h('input', {type: 'text', placeholder: 'field', 'aria-label': 'index field'});
    const mode = h('select', {'aria-label': 'index order'}, h('option', {value: 'ASCENDING'}, 'ascending'), h('option', {value: 'DESCENDING'}, 'descending'), h('option', {value: 'CONTAINS'}, 'array-contains'));
    fieldRows.push({path, mode});
    fields.appendChild(h('div', {class: 'row', style: 'margin-bottom:6px'}, path, mode));
  }
  addField(); addField();
  const form = h('form', {class: 'panel', onsubmit: async e => {
    e.preventDefault();
    clear(status);
    const cg = group.value.trim();
    group.setAttribute('aria-invalid', cg && !cg.includes('/') ? 'false' : 'true');
    const chosen = fieldRows.filter(r => r.path.value.trim());
    if (!cg || cg.includes('/') || chosen.length < 2) { status.appendChild(errorBanner(new Error('A composite index needs a collection group and at least two fields.'))); return; }
    const body = {queryScope: scope.value, fields: chosen.map(r => r.mode.value === 'CONTAINS'
      ? {fieldPath: r.path.value.trim(), arrayConfig: 'CONTAINS'} : {fieldPath: r.path.value.trim(), order: r.mode.value})};
    try {
      await api('POST', '/api/firestore/indexes?collectionGroup=' + encodeURIComponent(cg), body);
      toast('Index created.');
      load();
    } catch (err) { status.appendChild(errorBanner(err)); }
  }}, h('h2', null, 'Create an index'), h('div', {class: 'row'}, h('label', {for: 'ix-group', style: 'margin:0'}, 'Collection group'), group, scope),
    h('label', null, 'Fields, in order'), fields, h('button', {type: 'button', class: 'link', onclick: addField}, '+ Add field'),
    h('div', {style: 'margin-top:10px'}, h('button', {type: 'submit', class: 'primary'}, 'Create index')));
  root.appendChild(form);
  load();
}
