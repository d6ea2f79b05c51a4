// Realtime Database: the JSON tree with live updates (server-sent events), editing and JSON import.
import {h, clear, toast, errorBanner, dialog, confirmAction} from './dom.js';
import {api, proxy} from './api.js';

const MAX_CHILDREN = 200;

export async function render(main, context, rest) {
  main.appendChild(h('h1', null, 'Realtime Database'));
  const db = context.session.database;
  if (!db) { main.appendChild(h('div', {class: 'banner info'}, 'The Realtime Database is not running on this server.')); return; }
  const path = (rest || '').split('/').filter(s => s).map(decodeURIComponent);
  const url = p => `${proxy.database}/${p.map(encodeURIComponent).join('/')}.json?ns=${encodeURIComponent(db.namespace)}`;
  const crumbs = h('div', {class: 'crumbs'}, h('a', {href: '#/database'}, db.url || `${db.namespace}:/`));
  path.forEach((s, i) => crumbs.append(' / ', h('a', {href: '#/database/' + path.slice(0, i + 1).map(encodeURIComponent).join('/')}, s)));
  const badge = h('span', {class: 'badge'}, 'connecting…');
  const status = h('div');
  const tree = h('div', {class: 'tree', id: 'db-tree'});
  const importFile = h('input', {type: 'file', accept: '.json,application/json', id: 'db-import', class: 'visually-hidden'});
  main.append(h('div', {class: 'row', style: 'margin-bottom:8px'}, crumbs, badge, h('span', {class: 'spacer'}),
    h('button', {type: 'button', onclick: () => editValue(path, value)}, 'Edit value'),
    h('button', {type: 'button', onclick: () => addChild(path)}, 'Add child'),
    h('label', {class: 'button', for: 'db-import', style: 'margin:0;color:var(--ink)'}, 'Import JSON…'), importFile,
    path.length ? h('button', {type: 'button', class: 'danger', onclick: removeHere}, 'Delete…') : null),
    status, h('div', {class: 'panel'}, tree));

  let value = null;
  let changed = new Set();
  // Open nodes survive redraws; the first level starts open.
  const expanded = new Set([path.join('/')]);
  let firstDraw = true;
  const source = new EventSource(url(path));
  context.setCleanup(() => source.close());
  source.onopen = () => { badge.textContent = 'live'; badge.className = 'badge live'; };
  source.onerror = () => { badge.textContent = 'reconnecting…'; badge.className = 'badge'; };
  const apply = (kind, ev) => {
    const msg = JSON.parse(ev.data);
    const p = msg.path.split('/').filter(s => s);
    changed = new Set([p.join('/')]);
    if (kind === 'put') value = setAt(value, p, msg.data);
    else for (const [k, v] of Object.entries(msg.data || {})) { const q = p.concat(k.split('/').filter(s => s)); value = setAt(value, q, v); changed.add(q.join('/')); }
    draw();
  };
  source.addEventListener('put', ev => apply('put', ev));
  source.addEventListener('patch', ev => apply('patch', ev));
  source.addEventListener('cancel', () => { clear(status).appendChild(errorBanner(new Error('Permission denied: the rules no longer allow reading this location.'))); source.close(); });
  source.addEventListener('auth_revoked', () => { badge.textContent = 'credential expired'; });

  function draw() {
    clear(tree);
    if (value === null || value === undefined) { tree.appendChild(h('p', {class: 'muted'}, 'null — nothing is stored here.')); return; }
    if (firstDraw && typeof value === 'object') {
      for (const k of Object.keys(value).slice(0, 20)) expanded.add(path.concat([k]).join('/'));
      firstDraw = false;
    }
    tree.appendChild(h('ul', null, node(path[path.length - 1] || '(root)', value, path)));
  }
  function node(key, v, p) {
    const here = p.join('/');
    const open = expanded.has(here);
    const flash = changed.has(here) ? ' flash' : '';
    if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      const list = h('ul', {class: open ? '' : 'hidden'});
      keys.slice(0, MAX_CHILDREN).forEach(k => list.appendChild(node(k, v[k], p.concat([k]))));
      if (keys.length > MAX_CHILDREN) list.appendChild(h('li', {class: 'muted'}, h('a', {href: '#/database/' + p.map(encodeURIComponent).join('/')}, `… ${keys.length - MAX_CHILDREN} more children: open this node`)));
      const toggle = h('button', {type: 'button', class: 'link', 'aria-expanded': open ? 'true' : 'false', onclick: () => {
        const closed = list.classList.toggle('hidden');
        if (closed) expanded.delete(here); else expanded.add(here);
        toggle.textContent = closed ? '▸' : '▾';
      }}, open ? '▾' : '▸');
      return h('li', {class: 'node' + flash, dataset: {path: here}}, toggle, h('a', {class: 'key', href: '#/database/' + p.map(encodeURIComponent).join('/')}, key), h('span', {class: 'muted small'}, ` {${keys.length}}`), list);
    }
    return h('li', {class: 'node' + flash, dataset: {path: here}}, h('span', {class: 'key'}, key), ': ',
      h('button', {type: 'button', class: 'link val', title: 'Edit', onclick: () => editValue(p, v)}, JSON.stringify(v)));
  }

  async function editValue(p, current) {
    const area = h('textarea', {id: 'db-value', style: 'min-height:160px'});
    area.value = JSON.stringify(current === undefined ? null : current, null, 2);
    const error = h('div', {class: 'field-error'});
    await dialog('Edit /' + p.join('/'), h('div', null, h('p', {class: 'small muted'}, 'JSON; null deletes the value.'), area, error), [
      {label: 'Cancel', value: false},
      {label: 'Save', value: true, class: 'primary', validate: async () => {
        let v;
        try { v = JSON.parse(area.value); area.setAttribute('aria-invalid', 'false'); } catch (e) { area.setAttribute('aria-invalid', 'true'); error.textContent = 'Not valid JSON: ' + e.message; return false; }
        try { await api('PUT', url(p), JSON.stringify(v), {headers: {'Content-Type': 'application/json'}}); return true; } catch (e) { error.textContent = e.message; return false; }
      }},
    ]);
  }
  async function addChild(p) {
    const key = h('input', {type: 'text', id: 'db-key', placeholder: 'leave empty for a push id', style: 'width:100%'});
    const area = h('textarea', {id: 'db-child-value'});
    area.value = '""';
    const error = h('div', {class: 'field-error'});
    await dialog('Add a child of /' + p.join('/'), h('div', null, h('label', null, 'Key'), key, h('label', null, 'Value (JSON)'), area, error), [
      {label: 'Cancel', value: false},
      {label: 'Add', value: true, class: 'primary', validate: async () => {
        const k = key.value.trim();
        if (/[.$#[\]/\x00-\x1f\x7f]/.test(k)) { key.setAttribute('aria-invalid', 'true'); error.textContent = 'Keys cannot contain . $ # [ ] / or control characters.'; return false; }
        let v;
        try { v = JSON.parse(area.value); } catch (e) { area.setAttribute('aria-invalid', 'true'); error.textContent = 'Not valid JSON: ' + e.message; return false; }
        try {
          if (k) await api('PUT', url(p.concat([k])), JSON.stringify(v), {headers: {'Content-Type': 'application/json'}});
          else await api('POST', url(p), JSON.stringify(v), {headers: {'Content-Type': 'application/json'}});
          return true;
        } catch (e) { error.textContent = e.message; return false; }
      }},
    ]);
  }
  async function removeHere() {
    if (!(await confirmAction('Delete', `Delete /${path.join('/')} and everything under it?`, {typed: path[path.length - 1]}))) return;
    try { await api('DELETE', url(path)); toast('Deleted.'); context.navigate('database/' + path.slice(0, -1).map(encodeURIComponent).join('/')); } catch (e) { toast(e.message, 'error'); }
  }
  importFile.onchange = async () => {
    const f = importFile.files[0];
    importFile.value = '';
    if (!f) return;
    let v;
    try { v = JSON.parse(await f.text()); } catch (e) { toast(`${f.name} is not valid JSON: ${e.message}`, 'error'); return; }
    if (!(await confirmAction('Import JSON', `Replace /${path.join('/')} with the contents of ${f.name}?`, {label: 'Import'}))) return;
    try { await api('PUT', url(path), JSON.stringify(v), {headers: {'Content-Type': 'application/json'}}); toast('Imported ' + f.name); } catch (e) { toast(e.message, 'error'); }
  };
}

function setAt(root, p, v) {
  if (p.length === 0) return v;
  const copy = root !== null && typeof root === 'object' ? Object.assign({}, root) : {};
  const [k, ...rest] = p;
  const child = setAt(copy[k] === undefined ? null : copy[k], rest, v);
  if (child === null || (typeof child === 'object' && Object.keys(child).length === 0)) delete copy[k]; else copy[k] = child;
  return Object.keys(copy).length ? copy : null;
}
