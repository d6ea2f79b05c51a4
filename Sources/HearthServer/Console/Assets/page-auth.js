// Authentication: list and search users; create, disable, delete, custom claims, password reset,
// revoking refresh tokens — through the Identity Toolkit admin API.
import {h, clear, toast, errorBanner, dialog, confirmAction, formatTime} from './dom.js';
import {api, proxy} from './api.js';

let accounts = '';

export async function render(main, context) {
  accounts = `${proxy.auth}/identitytoolkit.googleapis.com/v1/projects/${encodeURIComponent(context.session.project)}/accounts`;
  const search = h('input', {type: 'search', id: 'user-search', placeholder: 'email, phone (+…) or uid', style: 'min-width:240px'});
  const status = h('div');
  const table = h('tbody');
  const more = h('button', {type: 'button', class: 'link hidden'}, 'Load more');
  main.append(h('h1', null, 'Authentication'),
    h('div', {class: 'row', style: 'margin-bottom:12px'},
      h('form', {class: 'row', onsubmit: e => { e.preventDefault(); find(); }}, search, h('button', {type: 'submit'}, 'Search'),
        h('button', {type: 'button', class: 'link', onclick: () => { search.value = ''; reload(); }}, 'Show all')),
      h('span', {class: 'spacer'}),
      h('button', {type: 'button', class: 'primary', id: 'add-user', onclick: createUser}, 'Add user')),
    status,
    h('div', {class: 'panel table-wrap'}, h('table', {id: 'users'},
      h('thead', null, h('tr', null, ['Identifier', 'Providers', 'Created', 'Last sign-in', 'User UID', 'Status', ''].map(t => h('th', null, t)))), table), more));

  let token = null;
  async function reload() { clear(table); clear(status); token = null; await page(); }
  async function page() {
    try {
      const q = new URLSearchParams({maxResults: '50'});
      if (token) q.set('nextPageToken', token);
      const r = await api('GET', `${accounts}:batchGet?${q}`) || {};
      for (const u of r.users || []) table.appendChild(userRow(u));
      if (!table.children.length) table.appendChild(h('tr', null, h('td', {colspan: 7, class: 'muted'}, 'No users yet.')));
      token = r.nextPageToken && (r.users || []).length ? r.nextPageToken : null;
      more.classList.toggle('hidden', !token);
    } catch (e) { status.appendChild(errorBanner(e)); }
  }
  more.onclick = page;
  async function find() {
    const text = search.value.trim();
    if (!text) return reload();
    clear(table); clear(status); more.classList.add('hidden');
    const body = text.includes('@') ? {email: [text]} : text.startsWith('+') ? {phoneNumber: [text]} : {localId: [text]};
    try {
      const r = await api('POST', `${accounts}:lookup`, body) || {};
      for (const u of r.users || []) table.appendChild(userRow(u));
      if (!table.children.length) table.appendChild(h('tr', null, h('td', {colspan: 7, class: 'muted'}, `No user matches "${text}".`)));
    } catch (e) { status.appendChild(errorBanner(e)); }
  }

  function userRow(u) {
    const providers = (u.providerUserInfo || []).map(p => p.providerId);
    const actions = h('td', {class: 'row', style: 'flex-wrap:nowrap'},
      h('button', {type: 'button', class: 'link', onclick: () => toggleDisabled(u)}, u.disabled ? 'Enable' : 'Disable'),
      h('button', {type: 'button', class: 'link', onclick: () => editClaims(u)}, 'Claims'),
      u.email ? h('button', {type: 'button', class: 'link', onclick: () => resetPassword(u)}, 'Reset password') : null,
      h('button', {type: 'button', class: 'link', onclick: () => revoke(u)}, 'Revoke tokens'),
      h('button', {type: 'button', class: 'link', style: 'color:var(--bad)', onclick: () => remove(u)}, 'Delete'));
    return h('tr', {dataset: {uid: u.localId}},
      h('td', null, u.email || u.phoneNumber || h('span', {class: 'muted'}, providers.length ? '' : 'anonymous'), u.displayName ? h('div', {class: 'small muted'}, u.displayName) : null),
      h('td', {class: 'small'}, providers.join(', ') || (u.passwordHash ? 'password' : '—')),
      h('td', {class: 'small mono'}, formatTime(u.createdAt)),
      h('td', {class: 'small mono'}, formatTime(u.lastLoginAt)),
      h('td', {class: 'small mono'}, u.localId),
      h('td', null, h('span', {class: 'badge ' + (u.disabled ? 'bad' : 'ok')}, u.disabled ? 'disabled' : 'enabled'),
        u.customAttributes && u.customAttributes !== '{}' ? h('div', {class: 'small mono muted', title: 'custom claims'}, u.customAttributes) : null),
      actions);
  }

  async function update(body, message) {
    try { await api('POST', `${accounts}:update`, body); toast(message); await (search.value.trim() ? find() : reload()); }
    catch (e) { toast(e.message, 'error'); }
  }
  function toggleDisabled(u) { return update({localId: u.localId, disableUser: !u.disabled}, (u.disabled ? 'Enabled ' : 'Disabled ') + (u.email || u.localId)); }
  async function revoke(u) {
    if (!(await confirmAction('Revoke refresh tokens', `Sign ${u.email || u.localId} out everywhere? Their refresh tokens stop working at once.`, {label: 'Revoke'}))) return;
    return update({localId: u.localId, validSince: String(Math.floor(Date.now() / 1000))}, 'Refresh tokens revoked.');
  }
  async function remove(u) {
    if (!(await confirmAction('Delete user', `Delete ${u.email || u.localId}? This cannot be undone.`))) return;
    try { await api('POST', `${accounts}:delete`, {localId: u.localId}); toast('Deleted.'); reload(); } catch (e) { toast(e.message, 'error'); }
  }
  async function editClaims(u) {
    const area = h('textarea', {id: 'claims', 'aria-label': 'custom claims'});
    area.value = JSON.stringify(JSON.parse(u.customAttributes || '{}'), null, 2);
    const error = h('div', {class: 'field-error'});
    const ok = await dialog('Custom claims', h('div', null, h('p', {class: 'small muted'}, 'A JSON object, at most 1,000 bytes; it appears in the user\'s next ID token.'), area, error), [
      {label: 'Cancel', value: false},
      {label: 'Save', value: true, class: 'primary', validate: () => {
        try {
          const v = JSON.parse(area.value || '{}');
          if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('Claims must be a JSON object.');
          if (new TextEncoder().encode(JSON.stringify(v)).length > 1000) throw new Error('Claims must be at most 1,000 bytes.');
          const reserved = Object.keys(v).find(k => ['iss', 'aud', 'auth_time', 'user_id', 'sub', 'iat', 'exp', 'firebase', 'nonce', 'azp', 'acr', 'amr', 'cnf', 'c_hash', 'at_hash'].includes(k));
          if (reserved) throw new Error(`"${reserved}" is a reserved claim.`);
          area.setAttribute('aria-invalid', 'false'); error.textContent = '';
          return true;
        } catch (e) { area.setAttribute('aria-invalid', 'true'); error.textContent = e.message; return false; }
      }},
    ]);
    if (ok) await update({localId: u.localId, customAttributes: JSON.stringify(JSON.parse(area.value || '{}'))}, 'Claims saved.');
  }
  async function resetPassword(u) {
    try {
      const r = await api('POST', `${accounts}:sendOobCode`, {requestType: 'PASSWORD_RESET', email: u.email, returnOobLink: true});
      await dialog('Password reset', h('div', null, h('p', null, 'A reset link for ', h('b', null, u.email), ':'),
        h('pre', {class: 'mono', id: 'reset-link', style: 'user-select:all'}, r && r.oobLink || '(sent by email)')), [{label: 'Close', value: true}]);
    } catch (e) { toast(e.message, 'error'); }
  }
  async function createUser() {
    const email = h('input', {type: 'email', id: 'new-email', style: 'width:100%', autocomplete: 'off'});
    const password = h('input', {type: 'password', id: 'new-password', style: 'width:100%', autocomplete: 'new-password'});
    const name = h('input', {type: 'text', id: 'new-name', style: 'width:100%'});
    const error = h('div');
    const ok = await dialog('Add a user', h('div', null, error, h('label', null, 'Email'), email, h('label', null, 'Password (at least 6 characters)'), password,
      h('label', null, 'Display name (optional)'), name), [
      {label: 'Cancel', value: false},
      {label: 'Add user', value: true, class: 'primary', validate: async () => {
        clear(error);
        const emailOK = /^[^@\s]+@[^@\s]+$/.test(email.value.trim());
        email.setAttribute('aria-invalid', emailOK ? 'false' : 'true');
        password.setAttribute('aria-invalid', password.value.length >= 6 ? 'false' : 'true');
        if (!emailOK || password.value.length < 6) { error.appendChild(errorBanner(new Error('Enter an email address and a password of at least 6 characters.'))); return false; }
        try {
          await api('POST', accounts, {email: email.value.trim(), password: password.value, displayName: name.value.trim() || undefined});
          return true;
        } catch (e) { error.appendChild(errorBanner(e)); return false; }
      }},
    ]);
    if (ok) { toast('User added.'); reload(); }
  }
  reload();
}
