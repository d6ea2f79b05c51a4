// Storage: buckets and prefixes, upload with progress, download, delete, metadata and download tokens.
import {h, clear, toast, errorBanner, dialog, confirmAction, formatBytes, formatTime} from './dom.js';
import {api, proxy, upload} from './api.js';

export async function render(main, context, rest) {
  const parts = rest ? rest.split('/') : [];
  const buckets = ((await api('GET', `${proxy.storage}/storage/v1/b?project=${encodeURIComponent(context.session.project)}`)) || {}).items || [];
  const bucket = parts[0] ? decodeURIComponent(parts[0]) : (buckets[0] && buckets[0].name);
  const prefix = parts.slice(1).map(decodeURIComponent).join('/');
  const at = p => 'storage/' + [bucket, ...p.split('/').filter(s => s)].map(encodeURIComponent).join('/') + (p ? '/' : '');
  main.appendChild(h('h1', null, 'Storage'));
  if (!bucket) { main.appendChild(h('p', {class: 'muted'}, 'There is no bucket yet.')); return; }
  const select = h('select', {id: 'bucket', 'aria-label': 'bucket', onchange: () => context.navigate('storage/' + encodeURIComponent(select.value))},
    buckets.map(b => h('option', {value: b.name}, b.name)));
  select.value = bucket;
  const crumbs = h('div', {class: 'crumbs'}, h('a', {href: '#/' + at('')}, `gs://${bucket}/`));
  const segs = prefix.split('/').filter(s => s);
  segs.forEach((s, i) => crumbs.append(h('a', {href: '#/' + at(segs.slice(0, i + 1).join('/'))}, s), '/'));
  const file = h('input', {type: 'file', id: 'upload-file', class: 'visually-hidden', multiple: true, 'aria-label': 'files to upload'});
  const uploads = h('div');
  const status = h('div');
  const tbody = h('tbody');
  const more = h('button', {type: 'button', class: 'link hidden'}, 'Load more');
  main.append(
    h('div', {class: 'row', style: 'margin-bottom:10px'}, h('label', {for: 'bucket', style: 'margin:0'}, 'Bucket'), select, h('span', {class: 'spacer'}),
      h('label', {class: 'button', for: 'upload-file', style: 'margin:0;color:var(--ink)'}, 'Upload files…'), file),
    crumbs, uploads, status,
    h('div', {class: 'panel table-wrap'}, h('table', {id: 'objects'},
      h('thead', null, h('tr', null, ['Name', 'Size', 'Type', 'Updated', ''].map(t => h('th', null, t)))), tbody), more));
    const v0 = `${proxy.storage}/v0/b/${encodeURIComponent(bucket)}/o`;
  const objectURL = name => `${v0}/${encodeURIComponent(name)}`;

  let token = null;
  async function load(reset) {
    if (reset) { clear(tbody); token = null; clear(status); }
    try {
      const q = new URLSearchParams({prefix: prefix ? prefix + '/' : '', delimiter: '/', maxResults: '100'});
      if (token) q.set('pageToken', token);
      const r = await api('GET', `${v0}?${q}`) || {};
      for (const p of r.prefixes || []) {
        const short = p.slice(prefix ? prefix.length + 1 : 0).replace(/\/$/, '');
        tbody.appendChild(h('tr', {class: 'clickable', onclick: () => context.navigate(at(p))},
          h('td', {class: 'mono'}, '📁 ', short + '/'), h('td', null, ''), h('td', {class: 'muted'}, 'folder'), h('td', null, ''), h('td', null, '')));
      }
      const items = r.items || [];
      const metas = await Promise.all(items.map(i => api('GET', objectURL(i.name)).catch(() => null)));
      items.forEach((it, i) => tbody.appendChild(objectRow(it.name, metas[i])));
      if (!tbody.children.length) tbody.appendChild(h('tr', null, h('td', {colspan: 5, class: 'muted'}, 'Nothing here yet. Upload a file.')));
      token = r.nextPageToken || null;
      more.classList.toggle('hidden', !token);
    } catch (e) { status.appendChild(errorBanner(e)); }
  }
  more.onclick = () => load(false);

  function objectRow(name, meta) {
    const short = name.slice(prefix ? prefix.length + 1 : 0);
    return h('tr', {dataset: {name}},
      h('td', {class: 'mono', style: 'word-break:break-all'}, short),
      h('td', null, meta ? formatBytes(meta.size) : ''),
      h('td', {class: 'small'}, meta ? meta.contentType || '' : ''),
      h('td', {class: 'small mono'}, meta ? formatTime(meta.updated) : ''),
      h('td', {class: 'row', style: 'flex-wrap:nowrap'},
        h('button', {type: 'button', class: 'link', onclick: () => download(name)}, 'Download'),
        h('button', {type: 'button', class: 'link', onclick: () => details(name)}, 'Details'),
        h('button', {type: 'button', class: 'link', style: 'color:var(--bad)', onclick: () => remove(name)}, 'Delete')));
  }

  async function download(name) {
    try {
      const r = await api('GET', objectURL(name) + '?alt=media', undefined, {raw: true});
      const blob = await r.blob();
      const a = h('a', {href: URL.createObjectURL(blob), download: name.split('/').pop()});
      document.body.appendChild(a); a.click(); a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    } catch (e) { toast(e.message, 'error'); }
  }

  async function remove(name) {
    if (!(await confirmAction('Delete file', `Delete gs://${bucket}/${name}? This cannot be undone.`))) return;
    try { await api('DELETE', objectURL(name)); toast('Deleted.'); load(true); } catch (e) { toast(e.message, 'error'); }
  }

  async function details(name) {
    let meta;
    try { meta = await api('GET', objectURL(name)); } catch (e) { toast(e.message, 'error'); return; }
    const ct = h('input', {type: 'text', id: 'meta-content-type', value: meta.contentType || '', style: 'width:100%'});
    const cc = h('input', {type: 'text', id: 'meta-cache-control', value: meta.cacheControl || '', style: 'width:100%'});
    const custom = h('textarea', {id: 'meta-custom'});
    custom.value = JSON.stringify(meta.metadata || {}, null, 2);
    const error = h('div', {class: 'field-error'});
    const tokens = h('ul', {id: 'tokens'});
    const storageBase = context.session.publicURLs && context.session.publicURLs.storage;
    function showTokens(list) {
      clear(tokens);
      for (const t of list) {
        const url = storageBase ? `${storageBase}/v0/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(name)}?alt=media&token=${t}` : t;
        tokens.appendChild(h('li', {class: 'mono small', style: 'word-break:break-all'}, h('a', {href: url, target: '_blank', rel: 'noopener'}, url), ' ',
          h('button', {type: 'button', class: 'link', style: 'color:var(--bad)', onclick: async () => {
            try { const r = await api('POST', `${objectURL(name)}?delete_token=${encodeURIComponent(t)}`); showTokens(split(r.downloadTokens)); } catch (e) { error.textContent = e.message; }
          }}, 'revoke')));
      }
      if (!list.length) tokens.appendChild(h('li', {class: 'muted small'}, 'No download tokens.'));
    }
    const split = s => (s || '').split(',').filter(x => x);
    showTokens(split(meta.downloadTokens));
    const body = h('div', null,
      h('table', null, h('tbody', null,
        h('tr', null, h('th', null, 'Path'), h('td', {class: 'mono'}, `gs://${bucket}/${name}`)),
        h('tr', null, h('th', null, 'Size'), h('td', null, formatBytes(meta.size), ` (${meta.size} bytes)`)),
        h('tr', null, h('th', null, 'MD5'), h('td', {class: 'mono'}, meta.md5Hash || '')),
        h('tr', null, h('th', null, 'Created'), h('td', {class: 'mono'}, formatTime(meta.timeCreated))),
        h('tr', null, h('th', null, 'Generation'), h('td', {class: 'mono'}, meta.generation || '')))),
      h('label', null, 'Content type'), ct, h('label', null, 'Cache-Control'), cc, h('label', null, 'Custom metadata (JSON object of strings)'), custom,
      h('h3', null, 'Download URLs ', h('button', {type: 'button', class: 'link', id: 'create-token', onclick: async () => {
        try { const r = await api('POST', `${objectURL(name)}?create_token=true`); showTokens(split(r.downloadTokens)); } catch (e) { error.textContent = e.message; }
      }}, '+ Create token')), tokens, error);
    const saved = await dialog('File details', body, [
      {label: 'Close', value: false},
      {label: 'Save metadata', value: true, class: 'primary', validate: async () => {
        let m;
        try {
          m = JSON.parse(custom.value || '{}');
          if (!m || typeof m !== 'object' || Array.isArray(m) || Object.values(m).some(v => typeof v !== 'string')) throw new Error('Custom metadata must be an object of strings.');
          custom.setAttribute('aria-invalid', 'false');
        } catch (e) { custom.setAttribute('aria-invalid', 'true'); error.textContent = e.message; return false; }
        try {
          await api('PATCH', objectURL(name), {contentType: ct.value.trim() || null, cacheControl: cc.value.trim() || null, metadata: m});
          return true;
        } catch (e) { error.textContent = e.message; return false; }
      }},
    ]);
    if (saved) { toast('Metadata saved.'); load(true); }
  }

  file.onchange = async () => {
    const files = Array.from(file.files || []);
    file.value = '';
    for (const f of files) {
      const name = (prefix ? prefix + '/' : '') + f.name;
      const bar = h('div');
      const line = h('div', {class: 'panel upload', dataset: {name}}, h('div', {class: 'row'}, h('span', {class: 'mono grow'}, name), h('span', {class: 'small muted'}, formatBytes(f.size))), h('div', {class: 'progress'}, bar));
      uploads.appendChild(line);
      try {
        await upload('POST', `${v0}?name=${encodeURIComponent(name)}`, f, f.type || 'application/octet-stream', p => { bar.style.width = Math.round(p * 100) + '%'; });
        bar.style.width = '100%';
        line.querySelector('.muted').textContent = 'uploaded';
        setTimeout(() => line.remove(), 2500);
      } catch (e) { line.appendChild(errorBanner(e)); }
    }
    load(true);
  };
  load(true);
}
