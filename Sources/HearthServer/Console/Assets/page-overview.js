// Overview: services and ports, version, where the data lives, counts, recent errors, metrics.
import {h, formatTime} from './dom.js';
import {api} from './api.js';

export async function render(main, context) {
  main.appendChild(h('h1', null, 'Overview'));
  const o = await api('GET', '/api/overview');
  const count = c => (c === null || c === undefined ? '—' : Number(c.value).toLocaleString('en-US') + (c.capped ? '+' : ''));
  main.appendChild(h('div', {class: 'cards'},
    card('Documents', count(o.counts.documents)),
    card('Users', count(o.counts.users)),
    card('Objects', count(o.counts.objects)),
    card('Mode', o.emulator ? 'emulator' : 'production'),
  ));
  const services = h('table', null,
    h('thead', null, h('tr', null, h('th', null, 'Service'), h('th', null, 'Port'), h('th', null, 'Clients reach it at'), h('th', null, 'Speaks'))),
    h('tbody', null, o.services.map(s => h('tr', null,
      h('td', null, s.name), h('td', {class: 'mono'}, s.port === null ? 'off' : String(s.port)),
      h('td', {class: 'mono'}, s.publicURL ? h('a', {href: s.publicURL, target: '_blank', rel: 'noopener'}, s.publicURL)
        : h('span', {class: 'muted'}, s.port === null ? '—' : 'this host, port ' + s.port)),
      h('td', {class: 'muted'}, s.protocol)))));
  main.appendChild(h('div', {class: 'grid2'},
    h('div', {class: 'panel'}, h('h2', null, 'Services'), h('div', {class: 'table-wrap'}, services)),
    h('div', {class: 'panel'}, h('h2', null, 'Server'),
      h('table', null, h('tbody', null,
        row('Version', o.version),
        row('Project', o.project),
        row(o.databaseURL ? 'Database' : 'Data directory', o.databaseURL || o.dataDirectory),
        row('Started', formatTime(o.startedAt)),
        row('Metrics', o.metricsURL ? h('a', {href: o.metricsURL, target: '_blank', rel: 'noopener'}, o.metricsURL) : h('span', {class: 'muted'}, 'no metrics endpoint on this server'))))),
  ));
  const errors = o.recentErrors || [];
  main.appendChild(h('div', {class: 'panel'}, h('h2', null, 'Recent errors'),
    errors.length === 0 ? h('p', {class: 'muted'}, 'No errors logged since the server started.') :
      h('div', {class: 'table-wrap'}, h('table', null,
        h('thead', null, h('tr', null, h('th', null, 'Time'), h('th', null, 'Message'), h('th', null, 'Details'))),
        h('tbody', null, errors.map(e => h('tr', null, h('td', {class: 'mono small'}, formatTime(e.time)), h('td', null, e.message),
          h('td', {class: 'mono small'}, Object.entries(e.metadata || {}).map(([k, v]) => `${k}=${v}`).join(' ')))))))));
}

function card(label, value) { return h('div', {class: 'card'}, h('div', {class: 'label'}, label), h('div', {class: 'value'}, value)); }
function row(k, v) { return h('tr', null, h('th', null, k), h('td', {class: 'mono', style: 'word-break:break-all'}, v)); }
