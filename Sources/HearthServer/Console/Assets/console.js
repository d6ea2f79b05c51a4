// The Hearth console: sign-in, the shell, and a hash router over the pages.
import {h, clear, toast, errorBanner} from './dom.js';
import {api, setCsrfToken} from './api.js';
import * as overview from './page-overview.js';
import * as firestore from './page-firestore.js';
import * as database from './page-database.js';
import * as auth from './page-auth.js';
import * as storage from './page-storage.js';
import * as rules from './page-rules.js';

const pages = [
  {id: 'overview', title: 'Overview', module: overview},
  {id: 'firestore', title: 'Firestore', module: firestore},
  {id: 'database', title: 'Realtime Database', module: database},
  {id: 'auth', title: 'Authentication', module: auth},
  {id: 'storage', title: 'Storage', module: storage},
  {id: 'rules', title: 'Rules', module: rules},
];

const app = document.getElementById('app');
let session = null;
let cleanup = null;

async function start() {
  try {
    session = await api('GET', '/api/session', undefined, {onUnauthorized: false});
    setCsrfToken(session.csrfToken);
    shell();
  } catch (e) {
    if (e.status === 401) signIn(); else { clear(app).appendChild(h('div', {class: 'pad'}, errorBanner(e))); }
  }
}

function signIn(message) {
  session = null;
  setCsrfToken(null);
  if (cleanup) { cleanup(); cleanup = null; }
  const methods = [
    {id: 'password', label: 'Console user'},
    {id: 'token', label: 'Admin credential'},
    {id: 'serviceAccount', label: 'Service account key'},
  ];
  let method = 'password';
  const status = h('div');
  const fields = h('div');
  const tabs = h('div', {class: 'tabs', role: 'tablist'});
  function renderFields() {
    clear(tabs);
    for (const m of methods) {
      tabs.appendChild(h('button', {type: 'button', role: 'tab', class: m.id === method ? 'active' : '', 'aria-selected': m.id === method ? 'true' : 'false',
        onclick: () => { method = m.id; renderFields(); }}, m.label));
    }
    clear(fields);
    if (method === 'password') {
      fields.append(
        h('label', {for: 'email'}, 'Email'), h('input', {id: 'email', name: 'email', type: 'email', autocomplete: 'username', required: true, style: 'width:100%'}),
        h('label', {for: 'password'}, 'Password'), h('input', {id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true, style: 'width:100%'}),
        h('p', {class: 'small muted'}, 'An Auth account with the admin custom claim, created with ', h('code', null, 'hearth admin console-user create'), '.'));
    } else if (method === 'token') {
      fields.append(
        h('label', {for: 'token'}, 'Admin credential'), h('input', {id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, style: 'width:100%'}),
        h('p', {class: 'small muted'}, 'The server\'s admin token (', h('code', null, '--admin-token'), ' or the file printed at first start). In emulator mode, ', h('code', null, 'owner'), '.'));
    } else {
      fields.append(
        h('label', {for: 'key'}, 'Service account key (JSON)'), h('textarea', {id: 'key', name: 'key', required: true, placeholder: '{"type": "service_account", …}'}),
        h('input', {type: 'file', accept: '.json,application/json', 'aria-label': 'key file', onchange: async e => {
          const f = e.target.files[0]; if (f) document.getElementById('key').value = await f.text();
        }}),
        h('p', {class: 'small muted'}, 'A key made by ', h('code', null, 'hearth admin service-account create'), '. It signs a short-lived assertion here in the browser and is never sent.'));
    }
  }
  renderFields();
  const form = h('form', {class: 'panel', onsubmit: async e => {
    e.preventDefault();
    clear(status);
    const body = {method};
    if (method === 'password') { body.email = form.querySelector('#email').value; body.password = form.querySelector('#password').value; }
    else if (method === 'token') body.token = form.querySelector('#token').value;
    else {
      // The key never leaves the browser: it signs a short-lived assertion that the server
      // exchanges like Google's token endpoint does (RFC 7523).
      try { body.assertion = await serviceAccountAssertion(JSON.parse(form.querySelector('#key').value)); }
      catch (err) { status.appendChild(errorBanner(new Error('Cannot use this key: ' + err.message))); return; }
    }
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      session = await api('POST', '/api/session', body, {onUnauthorized: false});
      setCsrfToken(session.csrfToken);
      shell();
    } catch (err) {
      status.appendChild(errorBanner(err));
    } finally { button.disabled = false; }
  }}, tabs, fields, h('div', {class: 'row', style: 'margin-top:12px'}, h('button', {type: 'submit', class: 'primary'}, 'Sign in')));
  clear(app).appendChild(h('div', {class: 'login'},
    h('div', {class: 'brand'}, 'Hearth ', h('span', {class: 'muted', style: 'font-weight:400'}, 'console')),
    message ? h('div', {class: 'banner info'}, message) : null, status, form));
}

function base64url(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function serviceAccountAssertion(key) {
  if (!key || key.type !== 'service_account' || !key.private_key || !key.client_email || !key.token_uri) {
    throw new Error('this is not a service-account key file (type, private_key, client_email and token_uri are required)');
  }
  if (!window.crypto || !crypto.subtle) throw new Error('the browser offers no Web Crypto here (use https or localhost)');
  const der = Uint8Array.from(atob(key.private_key.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '')), c => c.charCodeAt(0));
  const signer = await crypto.subtle.importKey('pkcs8', der, {name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256'}, false, ['sign']);
  const now = Math.floor(Date.now() / 1000);
  const encode = o => base64url(new TextEncoder().encode(JSON.stringify(o)));
  const input = encode({alg: 'RS256', typ: 'JWT', kid: key.private_key_id}) + '.' +
    encode({iss: key.client_email, sub: key.client_email, aud: key.token_uri, iat: now, exp: now + 300, scope: 'hearth-console'});
  const signature = await crypto.subtle.sign('RSASSA-PKCS1-v1_5', signer, new TextEncoder().encode(input));
  return input + '.' + base64url(new Uint8Array(signature));
}

function shell() {
  const nav = h('nav', {class: 'nav', 'aria-label': 'Pages'}, pages.map(p => h('a', {href: '#/' + p.id, dataset: {page: p.id}}, p.title)));
  const main = h('main', {class: 'main', id: 'main'});
  const who = h('div', {class: 'who'},
    h('div', null, session.user.name),
    h('div', null, session.project + (session.emulator ? ' · emulator' : '')),
    h('button', {type: 'button', onclick: signOut}, 'Sign out'));
  clear(app).appendChild(h('div', {class: 'shell'}, h('aside', {class: 'sidebar'}, h('div', {class: 'brand'}, 'Hearth', h('span', null, '·'), 'console'), nav, who), main));
  route();
}

async function signOut() {
  try { await api('DELETE', '/api/session'); } catch (e) { toast(e.message, 'error'); }
  signIn('You are signed out.');
}

async function route() {
  if (!session) return;
  const main = document.getElementById('main');
  if (!main) return;
  const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  const [pageId, ...rest] = hash.split('/');
  const page = pages.find(p => p.id === pageId) || pages[0];
  for (const a of document.querySelectorAll('.nav a')) a.classList.toggle('active', a.dataset.page === page.id);
  if (cleanup) { try { cleanup(); } catch { /* ignore */ } cleanup = null; }
  clear(main);
  document.title = page.title + ' · Hearth console';
  const context = {session, navigate, setCleanup: fn => { cleanup = fn; }};
  try {
    await page.module.render(main, context, rest.join('/'));
  } catch (e) {
    main.appendChild(errorBanner(e));
  }
}

/** Goes to a page; going to the page already shown redraws it (after a save, say). */
function navigate(path) {
  const target = '#/' + path;
  if (location.hash === target) route(); else location.hash = target;
}

window.addEventListener('hashchange', route);
window.addEventListener('hearth:signed-out', () => { if (session) signIn('Your session has ended. Sign in again.'); });
window.addEventListener('unhandledrejection', e => { toast(e.reason && e.reason.message ? e.reason.message : String(e.reason), 'error'); });
start();
