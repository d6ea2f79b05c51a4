// Rules: the active Firestore, Storage and Database rules; a playground that simulates a request
// and shows allow or deny with the deciding line and Hearth's explanation; coverage.
import {h, clear, errorBanner} from './dom.js';
import {api} from './api.js';

const METHODS = {
  firestore: ['get', 'list', 'create', 'update', 'delete'],
  storage: ['read', 'create', 'update', 'delete', 'list'],
};

export async function render(main, context, rest) {
  const service = ['firestore', 'storage', 'database'].includes(rest) ? rest : 'firestore';
  main.appendChild(h('h1', null, 'Rules'));
  main.appendChild(h('div', {class: 'tabs'}, [['firestore', 'Firestore'], ['storage', 'Storage'], ['database', 'Realtime Database']].map(([id, label]) =>
    h('button', {type: 'button', class: id === service ? 'active' : '', onclick: () => context.navigate('rules/' + id)}, label))));
  const all = await api('GET', '/api/rules');
  const active = all[service];
  if (!active) {
    main.appendChild(h('div', {class: 'banner info'}, service === 'database'
      ? 'No Realtime Database rules are loaded on this server.'
      : `No ${service === 'firestore' ? 'Firestore' : 'Storage'} rules are loaded: ${context.session.emulator ? 'in emulator mode every request is allowed' : 'every client request is denied; admin requests bypass rules'}. Load rules with firebase.json or --${service}-rules.`));
    return;
  }
  const sourceView = h('div', {class: 'source', id: 'rules-source'});
  const lines = active.source.split('\n');
  const lineEls = lines.map((text, i) => h('div', {class: 'line', dataset: {line: String(i + 1)}},
    h('span', {class: 'n'}, String(i + 1)), h('span', {class: 'hits'}, ''), h('span', {class: 'code'}, text || ' ')));
  sourceView.append(...lineEls);
  const coverageNote = h('span', {class: 'small muted'});
  const left = h('div', {class: 'panel'}, h('div', {class: 'row'}, h('h2', {style: 'margin:0', title: active.fileName || ''}, (active.fileName || service).split('/').pop()), h('span', {class: 'spacer'}), coverageNote,
    METHODS[service] ? h('button', {type: 'button', class: 'link', onclick: showCoverage}, 'Show coverage') : null), sourceView);
  if (!METHODS[service]) { main.appendChild(left); return; }

  const method = h('select', {id: 'sim-method'}, METHODS[service].map(m => h('option', {value: m}, m)));
  const path = h('input', {type: 'text', id: 'sim-path', placeholder: service === 'firestore' ? '/users/alice' : '/users/alice/avatar.png', style: 'width:100%'});
  const signedIn = h('input', {type: 'checkbox', id: 'sim-signed-in', checked: true});
  const uid = h('input', {type: 'text', id: 'sim-uid', placeholder: 'alice'});
  const claims = h('textarea', {id: 'sim-claims', placeholder: '{"email": "alice@example.com", "admin": true}'});
  const existing = h('textarea', {id: 'sim-existing', placeholder: service === 'firestore' ? '{"owner": "alice"}   (the stored document; empty = none)' : '{"size": 1024, "contentType": "image/png"}   (the stored object; empty = none)'});
  const data = h('textarea', {id: 'sim-data', placeholder: service === 'firestore' ? '{"owner": "alice", "title": "Buy milk"}   (the document after the write)' : '{"size": 2048, "contentType": "image/png"}   (the uploaded object)'});
  const others = h('textarea', {id: 'sim-documents', placeholder: '{"users/alice": {"role": "admin"}}   (other documents the rules read with get()/exists())'});
  const result = h('div', {id: 'sim-result'});
  const form = h('form', {class: 'panel', onsubmit: async e => { e.preventDefault(); await simulate(); }},
    h('h2', null, 'Playground'),
    h('div', {class: 'row'}, h('div', null, h('label', {for: 'sim-method'}, 'Method'), method), h('div', {class: 'grow'}, h('label', {for: 'sim-path'}, 'Path'), path)),
    h('label', {class: 'row', style: 'color:var(--ink)'}, signedIn, 'Signed in'),
    h('div', {class: 'row'}, h('label', {for: 'sim-uid', style: 'margin:0'}, 'uid'), uid),
    h('label', {for: 'sim-claims'}, 'Token claims (JSON)'), claims,
    h('label', {for: 'sim-existing'}, service === 'firestore' ? 'Existing document (JSON; {"$timestamp": …} etc. for typed values)' : 'Existing object (JSON)'), existing,
    h('label', {for: 'sim-data'}, service === 'firestore' ? 'New data (JSON)' : 'New object (JSON)'), data,
    h('label', {for: 'sim-documents'}, 'Other documents (JSON, path → fields)'), others,
    h('div', {style: 'margin-top:10px'}, h('button', {type: 'submit', class: 'primary', id: 'sim-run'}, 'Simulate')), result);
  main.appendChild(h('div', {class: 'grid2'}, left, form));

  function parseJSON(area, label) {
    const text = area.value.trim();
    if (!text) { area.setAttribute('aria-invalid', 'false'); return undefined; }
    try {
      const v = JSON.parse(text);
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error();
      area.setAttribute('aria-invalid', 'false');
      return v;
    } catch { area.setAttribute('aria-invalid', 'true'); throw new Error(`${label} must be a JSON object.`); }
  }

  async function simulate() {
    clear(result);
    for (const l of lineEls) l.classList.remove('decisive');
    let body;
    try {
      const p = path.value.trim();
      if (!p) { path.setAttribute('aria-invalid', 'true'); throw new Error('Enter a path.'); }
      path.setAttribute('aria-invalid', 'false');
      const c = {method: method.value, path: p};
      if (signedIn.checked) {
        if (!uid.value.trim()) { uid.setAttribute('aria-invalid', 'true'); throw new Error('Enter a uid, or clear "Signed in".'); }
        uid.setAttribute('aria-invalid', 'false');
        c.auth = {uid: uid.value.trim(), token: parseJSON(claims, 'Token claims') || {}};
      } else c.auth = null;
      const before = parseJSON(existing, service === 'firestore' ? 'Existing document' : 'Existing object');
      const after = parseJSON(data, 'New data');
      const documents = parseJSON(others, 'Other documents') || {};
      if (service === 'firestore') {
        if (before) documents[p.replace(/^\/+/, '')] = before;
        if (after) c.data = after;
      } else {
        if (before) c.resource = before;
        if (after) c.data = after;
      }
      body = {service, documents, case: c};
    } catch (e) { result.appendChild(errorBanner(e)); return; }
    try {
      const r = await api('POST', '/api/rules/simulate', body);
      const line = r.line ? lineEls[r.line - 1] : null;
      if (line) { line.classList.add('decisive'); line.scrollIntoView({block: 'center'}); }
      result.append(h('div', {class: 'panel', style: 'margin-top:12px'},
        h('div', {class: 'verdict ' + r.outcome, id: 'sim-verdict'}, r.outcome === 'allow' ? 'ALLOW' : 'DENY'),
        r.line ? h('p', {id: 'sim-line'}, `Decided at line ${r.line}, column ${r.column}: `, h('code', null, (lines[r.line - 1] || '').trim())) : null,
        h('pre', {class: 'small', id: 'sim-explanation'}, r.explanation || r.reason || '')));
    } catch (e) { result.appendChild(errorBanner(e)); }
  }

  async function showCoverage() {
    try {
      const c = await api('GET', '/api/rules/coverage?service=' + service);
      const perLine = new Map();
      for (const x of c.report || []) {
        const n = x.start.line;
        perLine.set(n, Math.max(perLine.get(n) || 0, x.evaluations));
      }
      lineEls.forEach((el, i) => {
        const hits = el.querySelector('.hits');
        if (perLine.has(i + 1)) {
          const n = perLine.get(i + 1);
          hits.textContent = n + '×';
          hits.classList.toggle('zero', n === 0);
          el.classList.toggle('covered', n > 0);
        } else hits.textContent = '';
      });
      coverageNote.textContent = `${c.evaluated} of ${c.expressions} expressions evaluated since the rules loaded`;
    } catch (e) { coverageNote.textContent = e.message; }
  }
}
