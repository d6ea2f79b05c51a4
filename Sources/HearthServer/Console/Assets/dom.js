// Small DOM helpers: elements are built with h(), never from HTML strings, so data from the
// server can never become markup.

/** h('div', {class: 'x', onclick: fn}, 'text', child, [more]) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'class') el.className = v;
      // Through the CSSOM: the Content-Security-Policy forbids inline style attributes.
      else if (k === 'style') el.style.cssText = v;
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'value') el.value = v;
      else if (k === 'checked') el.checked = !!v;
      else if (v === true) el.setAttribute(k, '');
      else el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

export function toast(message, kind = 'info') {
  let box = document.getElementById('toasts');
  if (!box) { box = h('div', {id: 'toasts', role: 'status', 'aria-live': 'polite'}); document.body.appendChild(box); }
  const t = h('div', {class: 'toast ' + kind}, message);
  box.appendChild(t);
  setTimeout(() => t.remove(), kind === 'error' ? 9000 : 3500);
}

/** An error banner inside a container: the server's message, never a blank page. */
export function errorBanner(error) {
  return h('div', {class: 'banner error', role: 'alert'}, error && error.message ? error.message : String(error));
}

/** A modal dialog; resolves with the value of the button pressed (or null when dismissed). */
export function dialog(title, body, buttons) {
  return new Promise(resolve => {
    const d = h('dialog', {'aria-label': title});
    const actions = h('div', {class: 'actions'});
    for (const b of buttons) {
      actions.appendChild(h('button', {class: b.class || '', type: 'button', onclick: async () => {
        if (b.validate && !(await b.validate())) return;
        d.close(); d.remove(); resolve(b.value);
      }}, b.label));
    }
    d.append(h('h2', null, title), body, actions);
    d.addEventListener('cancel', () => { d.remove(); resolve(null); });
    document.body.appendChild(d);
    d.showModal();
  });
}

/** Asks for confirmation; with `typed`, the user must type that text to enable the button. */
export async function confirmAction(title, message, {typed, label = 'Delete'} = {}) {
  const input = typed ? h('input', {type: 'text', class: 'mono', 'aria-label': 'confirmation', style: 'width:100%'}) : null;
  const body = h('div', null, h('p', null, message),
    typed ? h('p', {class: 'small muted'}, 'Type ', h('code', null, typed), ' to confirm.') : null, input);
  const result = await dialog(title, body, [
    {label: 'Cancel', value: false},
    {label, value: true, class: 'danger solid', validate: () => {
      if (!typed || input.value === typed) return true;
      input.setAttribute('aria-invalid', 'true');
      return false;
    }},
  ]);
  return result === true;
}

export function formatBytes(n) {
  n = Number(n);
  if (!isFinite(n)) return '';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)) + ' ' + units[i];
}

export function formatTime(value) {
  if (value === undefined || value === null || value === '') return '';
  const d = typeof value === 'number' || /^\d+$/.test(String(value)) ? new Date(Number(value)) : new Date(value);
  return isNaN(d) ? String(value) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
