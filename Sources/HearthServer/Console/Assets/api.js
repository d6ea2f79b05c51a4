// The console's one HTTP client. Every change carries the session's CSRF token; errors of every
// protocol Hearth speaks (Google REST, Identity Toolkit, Storage, Realtime Database, the console's
// own) become an ApiError with the server's message.

let csrfToken = null;
export function setCsrfToken(token) { csrfToken = token; }

export class ApiError extends Error {
  constructor(status, message, body) { super(message); this.status = status; this.body = body; }
}

export function errorFrom(status, data) {
  let message = `HTTP ${status}`;
  if (data && typeof data === 'object') {
    const e = data.error;
    if (typeof e === 'string') message = e;
    else if (e && typeof e.message === 'string') message = e.message + (e.status && !e.message.includes(e.status) ? ` (${e.status})` : '');
    else if (typeof data.detail === 'string') message = data.detail;
  } else if (typeof data === 'string' && data.trim()) {
    message = data.trim().slice(0, 600);
  }
  return new ApiError(status, message, data);
}

/** api('POST', '/api/…', body) → parsed JSON (or text); throws ApiError on non-2xx. */
export async function api(method, path, body, options = {}) {
  const headers = Object.assign({}, options.headers);
  if (method !== 'GET' && method !== 'HEAD' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  let payload;
  if (body instanceof Blob || body instanceof ArrayBuffer || typeof body === 'string') payload = body;
  else if (body !== undefined) { payload = JSON.stringify(body); headers['Content-Type'] = 'application/json'; }
  let response;
  try {
    response = await fetch(path, {method, headers, body: payload, credentials: 'same-origin', cache: 'no-store'});
  } catch (e) {
    throw new ApiError(0, 'The Hearth server cannot be reached (' + e.message + ').', null);
  }
  if (options.raw) {
    if (!response.ok) throw errorFrom(response.status, await readBody(response));
    return response;
  }
  const data = await readBody(response);
  if (response.status === 401 && options.onUnauthorized !== false) window.dispatchEvent(new CustomEvent('hearth:signed-out'));
  if (!response.ok) throw errorFrom(response.status, data);
  return data;
}

async function readBody(response) {
  const text = await response.text();
  if (!text) return null;
  try { return JSON.parse(text); } catch { return text; }
}

/** An upload with progress (fetch has no upload progress): XMLHttpRequest through the same rules. */
export function upload(method, path, file, contentType, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, path);
    xhr.withCredentials = true;
    if (csrfToken) xhr.setRequestHeader('X-CSRF-Token', csrfToken);
    xhr.setRequestHeader('Content-Type', contentType || 'application/octet-stream');
    xhr.upload.onprogress = e => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onerror = () => reject(new ApiError(0, 'The upload failed: the server cannot be reached.', null));
    xhr.onload = () => {
      let data = null;
      try { data = xhr.responseText ? JSON.parse(xhr.responseText) : null; } catch { data = xhr.responseText; }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data); else reject(errorFrom(xhr.status, data));
    };
    xhr.send(file);
  });
}

// Paths of the services, proxied by the console with the admin credential it holds.
export const proxy = {
  firestore: '/api/proxy/firestore',
  auth: '/api/proxy/auth',
  storage: '/api/proxy/storage',
  database: '/api/proxy/database',
};
